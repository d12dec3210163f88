package server

import (
	"crypto/hmac"
	"crypto/sha256"
)

// deviceKey signs the console's device cookies (accounts.Config.DeviceKey):
// derived from the installation's secret, so every instance knows them.
func deviceKey(secret []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("formd/device-cookies/v1"))
	return mac.Sum(nil)
}
