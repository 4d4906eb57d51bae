package access

import (
	"crypto/rand"
	"errors"
	"strings"
)

// alphabet has none of the symbols people mistake for each other (I, O,
// 0, 1; L stays, as neither 1 nor I is there to confuse it with) and 32
// symbols, so a random byte maps onto it without bias.
const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"

// codeLen symbols of 5 bits: 40 bits, never guessed within a code's life
// (codes expire, and only an owner can use one).
const codeLen = 8

// newCode returns a fresh code from crypto/rand, as stored (no dash).
func newCode() string {
	var b [codeLen]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	for i := range b {
		b[i] = alphabet[b[i]%byte(len(alphabet))]
	}
	return string(b[:])
}

// ShowCode is a stored code as people read it: XXXX-XXXX.
func ShowCode(code string) string {
	if len(code) != codeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

// ErrBadCode is a code that cannot be one of botd's: wrong length or a
// symbol outside the alphabet.
var ErrBadCode = errors.New("a pairing code is 8 letters and digits, like ABCD-EF23")

// ParseCode reads a code as a person may type it: any case, with or
// without the dash or spaces.
func ParseCode(s string) (string, error) {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
	if len(s) != codeLen {
		return "", ErrBadCode
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return "", ErrBadCode
		}
	}
	return s, nil
}
