//go:build !goolm

package matrix

import "testing"

// offlineCrypto: a build without the goolm tag has no Olm machine; the
// parser then takes the refusal path.
func offlineCrypto(testing.TB, *Matrix) cryptoEngine { return nil }
