package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/form"
)

// settingStore keeps small values by name, the first writer winning.
type settingStore interface {
	PutSetting(ctx context.Context, name string, value []byte) ([]byte, error)
}

// secretFile is the embedded tier's secret, beside the journal and the
// store so that a store rebuilt from the journal keeps it.
const secretFile = "secret"

// InstallationSecret finds the secret that keys fingerprints, claims and
// derived keys (form.Hasher): the --secret setting when given; else, with
// the embedded store, a file in the data directory made on the first
// start; else (PostgreSQL) the store's, made by the first instance and
// shared by all. The store keeps a check value of the secret and refuses
// another one: a lost secret file or a different FORMD_SECRET would
// otherwise make one participant two without a word.
func InstallationSecret(ctx context.Context, cfg config.Config, st settingStore) ([]byte, error) {
	secret := cfg.Secret
	switch {
	case secret != nil:
	case cfg.StoreDriver().OneInstance:
		var err error
		if secret, err = fileSecret(filepath.Join(cfg.Data, secretFile)); err != nil {
			return nil, err
		}
	default:
		fresh := make([]byte, form.SecretSize)
		rand.Read(fresh) //nolint:errcheck // crypto/rand does not fail on supported systems
		var err error
		if secret, err = st.PutSetting(ctx, "secret", fresh); err != nil {
			return nil, fmt.Errorf("read the installation secret from the store: %w", err)
		}
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("formd/secret-check/v1"))
	check := mac.Sum(nil)
	stored, err := st.PutSetting(ctx, "secret_check", check)
	if err != nil {
		return nil, fmt.Errorf("check the installation secret: %w", err)
	}
	if !bytes.Equal(stored, check) {
		return nil, errors.New("the installation secret is not the one this store was written with, so participants and " +
			"fingerprints would not match: restore the original secret (the file " + secretFile + " in --data, or --secret / FORMD_SECRET)")
	}
	return secret, nil
}

// fileSecret reads the secret file, or makes it: written to a temporary
// file, synced and renamed into place, so a crash leaves either no secret
// or a whole one.
func fileSecret(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err == nil {
		secret, err := hex.DecodeString(strings.TrimSpace(string(raw)))
		if err != nil || len(secret) < form.SecretSize {
			return nil, fmt.Errorf("the secret file %s is damaged (want %d hex-encoded bytes): restore it from a backup", path, form.SecretSize)
		}
		return secret, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("read the secret file: %w", err)
	}
	secret := make([]byte, form.SecretSize)
	rand.Read(secret) //nolint:errcheck // crypto/rand does not fail on supported systems
	if err := atomicfile.WriteFile(path, []byte(hex.EncodeToString(secret)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("make the secret file: %w", err)
	}
	return secret, nil
}
