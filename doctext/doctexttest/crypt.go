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
)

// Encryption of generated PDFs with the standard security handler and
// an empty user password, as tools write files that open without one but
// forbid printing or copying. (The reader was checked against files qpdf
// encrypted, and qpdf and pdftotext open these, so the tests need no
// qpdf. /Perms is left zero: readers only warn about it.)

// Encryption names a way to encrypt: "aes128" (revision 4) or "aes256"
// (revision 6); "aes256-password" is AES-256 whose user password is not
// empty.
type Encryption string

var pdfPadding = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

type encryptor struct {
	key     []byte
	perObj  bool // AES-128 derives a key per object
	dict    string
	fileID  []byte
	trailer string
}

func newEncryptor(e Encryption) *encryptor {
	id := []byte("0123456789abcdef")
	owner := bytes.Repeat([]byte{0x42}, 32) // any O will do: the key follows from it
	var p int32 = -1340                     // no printing, no copying
	switch e {
	case "aes128":
		h := md5.New()
		h.Write(pdfPadding)
		h.Write(owner)
		var pb [4]byte
		binary.LittleEndian.PutUint32(pb[:], uint32(p))
		h.Write(pb[:])
		h.Write(id)
		key := h.Sum(nil)
		for range 50 {
			s := md5.Sum(key)
			key = s[:]
		}
		u := md5.Sum(append(append([]byte(nil), pdfPadding...), id...))
		check := u[:]
		for i := range 20 {
			k := make([]byte, 16)
			for j := range key {
				k[j] = key[j] ^ byte(i)
			}
			check = rc4(k, check)
		}
		check = append(check, make([]byte, 16)...)
		return &encryptor{key: key, perObj: true, fileID: id,
			dict: fmt.Sprintf("<< /Filter /Standard /V 4 /R 4 /Length 128 /CF << /StdCF << /CFM /AESV2 /Length 16 /AuthEvent /DocOpen >> >> "+
				"/StmF /StdCF /StrF /StdCF /O <%x> /U <%x> /P %d >>", owner, check, p)}
	case "aes256", "aes256-password":
		key := bytes.Repeat([]byte{0x5A}, 32)
		password := []byte(nil)
		if e == "aes256-password" {
			password = []byte("secret")
		}
		valSalt, keySalt := []byte("valsalt1"), []byte("keysalt1")
		u := append(append(hash2B(password, valSalt), valSalt...), keySalt...)
		block, _ := aes.NewCipher(hash2B(password, keySalt))
		ue := make([]byte, 32)
		cipher.NewCBCEncrypter(block, make([]byte, 16)).CryptBlocks(ue, key)
		return &encryptor{key: key, fileID: id,
			dict: fmt.Sprintf("<< /Filter /Standard /V 5 /R 6 /Length 256 /CF << /StdCF << /CFM /AESV3 /Length 32 /AuthEvent /DocOpen >> >> "+
				"/StmF /StdCF /StrF /StdCF /O <%x> /U <%x> /OE <%x> /UE <%x> /Perms <%x> /P %d >>",
				bytes.Repeat([]byte{1}, 48), u, make([]byte, 32), ue, make([]byte, 16), p)}
	}
	panic("unknown encryption " + string(e))
}

// encrypt is AES-CBC with the IV first and PKCS#5 padding.
func (e *encryptor) encrypt(num int, data []byte) []byte {
	key := e.key
	if e.perObj {
		h := md5.New()
		h.Write(key)
		h.Write([]byte{byte(num), byte(num >> 8), byte(num >> 16), 0, 0})
		h.Write([]byte("sAlT"))
		key = h.Sum(nil)
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

// hash2B is ISO 32000-2's revision-6 password hash.
func hash2B(password, salt []byte) []byte {
	sum := sha256.Sum256(append(append([]byte(nil), password...), salt...))
	k := sum[:]
	for i := 0; ; i++ {
		k1 := bytes.Repeat(append(append([]byte(nil), password...), k...), 64)
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
