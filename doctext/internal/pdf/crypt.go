package pdf

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/md5"
	"crypto/rc4"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
)

// Many PDFs are encrypted with an empty user password: anyone may open
// them, and the owner password only guards printing or copying. Those are
// read (the standard security handler, RC4 and AES, PDF 32000 §7.6 and
// ISO 32000-2 for AES-256); one that needs a password is ErrEncrypted.

// padding is the password padding of the standard security handler.
var padding = []byte{
	0x28, 0xBF, 0x4E, 0x5E, 0x4E, 0x75, 0x8A, 0x41, 0x64, 0x00, 0x4E, 0x56, 0xFF, 0xFA, 0x01, 0x08,
	0x2E, 0x2E, 0x00, 0xB6, 0xD0, 0x68, 0x3E, 0x80, 0x2F, 0x0C, 0xA9, 0xFE, 0x64, 0x53, 0x69, 0x7A,
}

type cryptMethod int

const (
	cryptNone cryptMethod = iota
	cryptRC4
	cryptAES  // AES-128, a key per object
	cryptAES3 // AES-256, the file key itself
)

type crypt struct {
	key    []byte
	method cryptMethod // for streams
}

func encrypted(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrEncrypted, fmt.Sprintf(format, a...))
}

// openCrypt reads the encryption dictionary and finds the file key for
// the empty user password.
func (d *Doc) openCrypt() (*crypt, error) {
	e := d.dictOf(d.trailer["Encrypt"])
	if e == nil {
		return nil, malformed("bad /Encrypt")
	}
	if f, _ := d.resolve(e["Filter"]).(name); f != "Standard" {
		return nil, encrypted("the PDF is encrypted for its readers' certificates (security handler %s), not with a password", string(f))
	}
	v, _ := d.intOf(e["V"])
	r, _ := d.intOf(e["R"])
	o, _ := d.resolve(e["O"]).(string)
	u, _ := d.resolve(e["U"]).(string)
	p, _ := d.intOf(e["P"])
	c := &crypt{method: cryptRC4}
	if v >= 4 {
		c.method = d.streamFilter(e)
	}
	if r >= 5 {
		ue, _ := d.resolve(e["UE"]).(string)
		oe, _ := d.resolve(e["OE"]).(string)
		key, ok := aes256Key(r, []byte(u), []byte(ue))
		if !ok {
			key, ok = aes256OwnerKey(r, []byte(o), []byte(oe), []byte(u))
		}
		if !ok {
			return nil, encrypted("the PDF needs a password to open")
		}
		c.key = key
		return c, nil
	}
	n := 5
	if r >= 3 {
		bits, ok := d.intOf(e["Length"])
		if !ok {
			bits = 40
		}
		if bits >= 5 && bits <= 16 {
			bits *= 8 // a length in bytes, as some writers put it
		}
		if bits < 40 || bits > 128 || bits%8 != 0 {
			return nil, malformed("bad key length %d", bits)
		}
		n = int(bits / 8)
	}
	if v >= 4 {
		n = 16
	}
	var id []byte
	if ids, _ := d.resolve(d.trailer["ID"]).(array); len(ids) > 0 {
		s, _ := d.resolve(ids[0]).(string)
		id = []byte(s)
	}
	encMeta := true
	if b, ok := d.resolve(e["EncryptMetadata"]).(bool); ok {
		encMeta = b
	}
	k := legacyKey{r: r, n: n, o: []byte(o), u: []byte(u), p: p, id: id, encMeta: encMeta}
	// The empty user password; else the empty owner password, which
	// readers try too: it unlocks the user password, whatever it is.
	if key, ok := k.fileKey(padding); ok {
		c.key = key
		return c, nil
	}
	if key, ok := k.fileKey(k.userFromOwner(nil)); ok {
		c.key = key
		return c, nil
	}
	return nil, encrypted("the PDF needs a password to open")
}

// legacyKey holds what the file keys of revisions 2 to 4 derive from.
type legacyKey struct {
	r, p    int64
	n       int
	o, u    []byte
	id      []byte
	encMeta bool
}

// fileKey is the key of a padded user password, if it makes U
// (algorithms 2, 4 and 5).
func (k legacyKey) fileKey(pw []byte) ([]byte, bool) {
	h := md5.New()
	h.Write(pw)
	h.Write(k.o)
	var pb [4]byte
	binary.LittleEndian.PutUint32(pb[:], uint32(k.p))
	h.Write(pb[:])
	h.Write(k.id)
	if k.r >= 4 && !k.encMeta {
		h.Write([]byte{0xff, 0xff, 0xff, 0xff})
	}
	key := h.Sum(nil)
	if k.r >= 3 {
		for range 50 {
			s := md5.Sum(key[:k.n])
			key = s[:]
		}
	}
	key = key[:k.n]
	if k.r == 2 {
		return key, bytes.Equal(rc4Crypt(key, padding), k.u)
	}
	h2 := md5.Sum(append(append([]byte(nil), padding...), k.id...))
	check := h2[:]
	for i := range 20 {
		check = rc4Crypt(xorKey(key, byte(i)), check)
	}
	return key, len(k.u) >= 16 && bytes.Equal(check, k.u[:16])
}

// userFromOwner is the padded user password O holds, decrypted with the
// owner password (algorithm 7).
func (k legacyKey) userFromOwner(owner []byte) []byte {
	h := md5.Sum(append(append([]byte(nil), owner...), padding...)[:32])
	key := h[:]
	if k.r >= 3 {
		for range 50 {
			s := md5.Sum(key[:k.n])
			key = s[:]
		}
	}
	key = key[:k.n]
	if len(k.o) < 32 {
		return nil
	}
	user := k.o[:32]
	if k.r == 2 {
		return rc4Crypt(key, user)
	}
	for i := 19; i >= 0; i-- {
		user = rc4Crypt(xorKey(key, byte(i)), user)
	}
	return user
}

func xorKey(key []byte, b byte) []byte {
	k := make([]byte, len(key))
	for j := range key {
		k[j] = key[j] ^ b
	}
	return k
}

// streamFilter is the method of the crypt filter streams use (V4, V5).
func (d *Doc) streamFilter(e dict) cryptMethod {
	stmF, ok := d.resolve(e["StmF"]).(name)
	if !ok || stmF == "Identity" {
		return cryptNone
	}
	cf := d.dictOf(d.dictOf(e["CF"])[stmF])
	switch m, _ := d.resolve(cf["CFM"]).(name); m {
	case "V2":
		return cryptRC4
	case "AESV2":
		return cryptAES
	case "AESV3":
		return cryptAES3
	}
	return cryptNone
}

func rc4Crypt(key, data []byte) []byte {
	c, err := rc4.NewCipher(key)
	if err != nil {
		return nil
	}
	out := make([]byte, len(data))
	c.XORKeyStream(out, data)
	return out
}

// aes256Key checks the empty user password against U and unwraps the
// file key from UE (ISO 32000-2, algorithms 2.A and 2.B).
func aes256Key(r int64, u, ue []byte) ([]byte, bool) {
	if len(u) < 48 || len(ue) < 32 {
		return nil, false
	}
	valSalt, keySalt := u[32:40], u[40:48]
	if !bytes.Equal(hash2B(r, nil, valSalt, nil), u[:32]) {
		return nil, false
	}
	block, err := aes.NewCipher(hash2B(r, nil, keySalt, nil))
	if err != nil {
		return nil, false
	}
	key := make([]byte, 32)
	cipher.NewCBCDecrypter(block, make([]byte, 16)).CryptBlocks(key, ue[:32])
	return key, true
}

// aes256OwnerKey checks the empty owner password against O and unwraps
// the file key from OE; the owner's hashes take in U.
func aes256OwnerKey(r int64, o, oe, u []byte) ([]byte, bool) {
	if len(o) < 48 || len(oe) < 32 || len(u) < 48 {
		return nil, false
	}
	valSalt, keySalt := o[32:40], o[40:48]
	if !bytes.Equal(hash2B(r, nil, valSalt, u[:48]), o[:32]) {
		return nil, false
	}
	block, err := aes.NewCipher(hash2B(r, nil, keySalt, u[:48]))
	if err != nil {
		return nil, false
	}
	key := make([]byte, 32)
	cipher.NewCBCDecrypter(block, make([]byte, 16)).CryptBlocks(key, oe[:32])
	return key, true
}

// hash2B is the password hash of revision 6 (plain SHA-256 in the
// withdrawn revision 5); udata is U for the owner password.
func hash2B(r int64, password, salt, udata []byte) []byte {
	sum := sha256.Sum256(append(append(append([]byte(nil), password...), salt...), udata...))
	k := sum[:]
	if r < 6 {
		return k
	}
	for i := 0; ; i++ {
		k1 := bytes.Repeat(append(append(append([]byte(nil), password...), k...), udata...), 64)
		block, _ := aes.NewCipher(k[:16])
		e := make([]byte, len(k1))
		cipher.NewCBCEncrypter(block, k[16:32]).CryptBlocks(e, k1)
		var mod int
		for _, b := range e[:16] {
			mod += int(b)
		}
		var h hash.Hash
		switch mod % 3 {
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

// objectKey is the key of one object's data (algorithm 1).
func (c *crypt) objectKey(num, gen int32) []byte {
	if c.method == cryptAES3 {
		return c.key
	}
	h := md5.New()
	h.Write(c.key)
	h.Write([]byte{byte(num), byte(num >> 8), byte(num >> 16), byte(gen), byte(gen >> 8)})
	if c.method == cryptAES {
		h.Write([]byte("sAlT"))
	}
	return h.Sum(nil)[:min(len(c.key)+5, 16)]
}

// decrypt wraps the raw data of stream object num.
func (c *crypt) decrypt(r io.Reader, num, gen int32) io.Reader {
	switch c.method {
	case cryptRC4:
		ci, err := rc4.NewCipher(c.objectKey(num, gen))
		if err != nil {
			return &errReader{err}
		}
		return cipher.StreamReader{S: ci, R: r}
	case cryptAES, cryptAES3:
		return &aesReader{r: r, key: c.objectKey(num, gen)}
	}
	return r
}

// aesReader decrypts AES-CBC data whose first block is the IV, holding
// back the last block until the end to strip its padding.
type aesReader struct {
	r    io.Reader
	key  []byte
	mode cipher.BlockMode
	in   []byte // ciphertext not yet decrypted
	out  []byte // plaintext not yet read
	held []byte // the last block decrypted, which may end in padding
	done bool
	err  error
}

func (a *aesReader) Read(p []byte) (int, error) {
	for len(a.out) == 0 {
		if a.done {
			if a.err != nil {
				return 0, a.err
			}
			return 0, io.EOF
		}
		a.fill()
	}
	n := copy(p, a.out)
	a.out = a.out[n:]
	return n, nil
}

func (a *aesReader) fill() {
	buf := make([]byte, 32<<10)
	n, err := io.ReadFull(a.r, buf)
	a.in = append(a.in, buf[:n]...)
	end := err != nil
	if end && err != io.EOF && err != io.ErrUnexpectedEOF {
		a.err = err
	}
	if a.mode == nil {
		if len(a.in) < aes.BlockSize {
			a.done = end
			return
		}
		block, err := aes.NewCipher(a.key)
		if err != nil {
			a.err, a.done = err, true
			return
		}
		a.mode = cipher.NewCBCDecrypter(block, a.in[:aes.BlockSize])
		a.in = a.in[aes.BlockSize:]
	}
	whole := len(a.in) - len(a.in)%aes.BlockSize
	plain := make([]byte, len(a.held)+whole)
	copy(plain, a.held)
	a.mode.CryptBlocks(plain[len(a.held):], a.in[:whole])
	a.in = append(a.in[:0], a.in[whole:]...)
	if end {
		if n := len(plain); n > 0 {
			if pad := int(plain[n-1]); pad >= 1 && pad <= aes.BlockSize && pad <= n {
				plain = plain[:n-pad]
			}
		}
		a.out, a.held, a.done = plain, nil, true
		return
	}
	keep := min(len(plain), aes.BlockSize)
	a.out = plain[:len(plain)-keep]
	a.held = append([]byte(nil), plain[len(plain)-keep:]...)
}
