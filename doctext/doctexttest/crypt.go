package doctexttest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"hash"
	"strings"
)

// Encryption of generated PDFs with the standard security handler and
// an empty user password, as tools write files that open without one but
// forbid printing or copying. (The reader was checked against files qpdf
// encrypted, and qpdf and pdftotext open these, so the tests need no
// qpdf. /Perms is left zero: readers only warn about it.)

// Encryption names a way to encrypt: "rc4-40" (V1, revision 2),
// "rc4-128" (V2, revision 3), "rc4-128-cf" (V4, revision 4 with an RC4
// crypt filter), "aes128" (revision 4), "aes256-r5" (the withdrawn
// revision 5 of Acrobat 9) or "aes256" (revision 6). A "-password" suffix
// sets the user password to "secret"; "-owner" does too, and leaves the
// owner password empty, which readers try as well.
type Encryption string

var pdfPadding = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

type encryptor struct {
	key     []byte
	perObj  bool // RC4 and AES-128 derive a key per object
	rc4     bool
	dict    string
	fileID  []byte
	trailer string
}

func padded(pw []byte) []byte { return append(append([]byte(nil), pw...), pdfPadding...)[:32] }

func newEncryptor(e Encryption) *encryptor {
	id := []byte("0123456789abcdef")
	var p int32 = -1340 // no printing, no copying
	kind, userPw, ownerPw := string(e), []byte(nil), []byte("owner")
	if k, ok := strings.CutSuffix(kind, "-password"); ok {
		kind, userPw = k, []byte("secret")
	}
	if k, ok := strings.CutSuffix(kind, "-owner"); ok {
		kind, userPw, ownerPw = k, []byte("secret"), nil
	}
	switch kind {
	case "rc4-40", "rc4-128", "rc4-128-cf", "aes128":
		r, v, n := 3, 2, 16
		switch kind {
		case "rc4-40":
			r, v, n = 2, 1, 5
		case "rc4-128-cf", "aes128":
			r, v = 4, 4
		}
		// Algorithm 3: O from the owner password.
		oh := md5.Sum(padded(ownerPw))
		okey := oh[:]
		if r >= 3 {
			for range 50 {
				s := md5.Sum(okey[:n])
				okey = s[:]
			}
		}
		okey = okey[:n]
		owner := rc4(okey, padded(userPw))
		if r >= 3 {
			for i := 1; i <= 19; i++ {
				owner = rc4(xorKey(okey, byte(i)), owner)
			}
		}
		// Algorithm 2: the file key from the user password.
		h := md5.New()
		h.Write(padded(userPw))
		h.Write(owner)
		var pb [4]byte
		binary.LittleEndian.PutUint32(pb[:], uint32(p))
		h.Write(pb[:])
		h.Write(id)
		key := h.Sum(nil)
		if r >= 3 {
			for range 50 {
				s := md5.Sum(key[:n])
				key = s[:]
			}
		}
		key = key[:n]
		// Algorithms 4 and 5: U.
		var check []byte
		if r == 2 {
			check = rc4(key, pdfPadding)
		} else {
			u := md5.Sum(append(append([]byte(nil), pdfPadding...), id...))
			check = u[:]
			for i := range 20 {
				check = rc4(xorKey(key, byte(i)), check)
			}
			check = append(check, make([]byte, 16)...)
		}
		enc := &encryptor{key: key, perObj: true, rc4: kind != "aes128", fileID: id}
		switch kind {
		case "rc4-40", "rc4-128":
			enc.dict = fmt.Sprintf("<< /Filter /Standard /V %d /R %d /Length %d /O <%x> /U <%x> /P %d >>", v, r, n*8, owner, check, p)
		default:
			cfm := "AESV2"
			if enc.rc4 {
				cfm = "V2"
			}
			enc.dict = fmt.Sprintf("<< /Filter /Standard /V 4 /R 4 /Length 128 /CF << /StdCF << /CFM /%s /Length 16 /AuthEvent /DocOpen >> >> "+
				"/StmF /StdCF /StrF /StdCF /O <%x> /U <%x> /P %d >>", cfm, owner, check, p)
		}
		return enc
	case "aes256", "aes256-r5":
		r := 6
		if kind == "aes256-r5" {
			r = 5
		}
		key := bytes.Repeat([]byte{0x5A}, 32)
		valSalt, keySalt := []byte("valsalt1"), []byte("keysalt1")
		u := append(append(hash2B(r, userPw, valSalt, nil), valSalt...), keySalt...)
		block, _ := aes.NewCipher(hash2B(r, userPw, keySalt, nil))
		ue := make([]byte, 32)
		cipher.NewCBCEncrypter(block, make([]byte, 16)).CryptBlocks(ue, key)
		oValSalt, oKeySalt := []byte("ovalsalt"), []byte("okeysalt")
		o := append(append(hash2B(r, ownerPw, oValSalt, u), oValSalt...), oKeySalt...)
		block, _ = aes.NewCipher(hash2B(r, ownerPw, oKeySalt, u))
		oe := make([]byte, 32)
		cipher.NewCBCEncrypter(block, make([]byte, 16)).CryptBlocks(oe, key)
		return &encryptor{key: key, fileID: id,
			dict: fmt.Sprintf("<< /Filter /Standard /V 5 /R %d /Length 256 /CF << /StdCF << /CFM /AESV3 /Length 32 /AuthEvent /DocOpen >> >> "+
				"/StmF /StdCF /StrF /StdCF /O <%x> /U <%x> /OE <%x> /UE <%x> /Perms <%x> /P %d >>",
				r, o, u, oe, ue, make([]byte, 16), p)}
	}
	panic("unknown encryption " + string(e))
}

func xorKey(key []byte, b byte) []byte {
	k := make([]byte, len(key))
	for j := range key {
		k[j] = key[j] ^ b
	}
	return k
}

// encrypt is RC4, or AES-CBC with the IV first and PKCS#5 padding.
func (e *encryptor) encrypt(num int, data []byte) []byte {
	key := e.key
	if e.perObj {
		h := md5.New()
		h.Write(key)
		h.Write([]byte{byte(num), byte(num >> 8), byte(num >> 16), 0, 0})
		if !e.rc4 {
			h.Write([]byte("sAlT"))
		}
		key = h.Sum(nil)[:min(len(e.key)+5, 16)]
	}
	if e.rc4 {
		return rc4(key, data)
	}
	block, _ := aes.NewCipher(key)
	pad := 16 - len(data)%16
	plain := append(append([]byte(nil), data...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	iv := []byte("iviviviviviviviv")
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, plain)
	return append(append([]byte(nil), iv...), out...)
}

func rc4(key, data []byte) []byte {
	var s [256]byte
	for i := range s {
		s[i] = byte(i)
	}
	j := 0
	for i := range 256 {
		j = (j + int(s[i]) + int(key[i%len(key)])) % 256
		s[i], s[j] = s[j], s[i]
	}
	out := make([]byte, len(data))
	i, j := 0, 0
	for k, c := range data {
		i = (i + 1) % 256
		j = (j + int(s[i])) % 256
		s[i], s[j] = s[j], s[i]
		out[k] = c ^ s[(int(s[i])+int(s[j]))%256]
	}
	return out
}

// hash2B is ISO 32000-2's revision-6 password hash (plain SHA-256 in
// revision 5); udata is U for the owner password's hashes.
func hash2B(r int, password, salt, udata []byte) []byte {
	sum := sha256.Sum256(append(append(append([]byte(nil), password...), salt...), udata...))
	k := sum[:]
	if r == 5 {
		return k
	}
	for i := 0; ; i++ {
		k1 := bytes.Repeat(append(append(append([]byte(nil), password...), k...), udata...), 64)
		block, _ := aes.NewCipher(k[:16])
		e := make([]byte, len(k1))
		cipher.NewCBCEncrypter(block, k[16:32]).CryptBlocks(e, k1)
		sum := 0
		for _, b := range e[:16] {
			sum += int(b)
		}
		var h hash.Hash
		switch sum % 3 {
		case 0:
			h = sha256.New()
		case 1:
			h = sha512.New384()
		default:
			h = sha512.New()
		}
		h.Write(e)
		k = h.Sum(nil)
		if i >= 63 && int(e[len(e)-1]) <= i-31 {
			return k[:32]
		}
	}
}
