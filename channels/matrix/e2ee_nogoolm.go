//go:build !goolm

package matrix

import (
	"context"
	"errors"
)

// CryptoBuilt says this build has end-to-end encryption: built without
// the goolm tag it has not (mautrix's crypto would need libolm and cgo).
const CryptoBuilt = false

// openCrypto refuses: encrypted rooms are then refused, clearly.
func (m *Matrix) openCrypto(context.Context) (cryptoEngine, error) {
	return nil, errors.New("this botd was built without end-to-end encryption: build it with -tags goolm (make build does) for mautrix's pure-Go Olm")
}
