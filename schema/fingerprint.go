package schema

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
)

// Fingerprint returns SHA-256 over a domain separator and the JSON
// encoding of the parsed schema (fields in declaration order, so two
// parties holding the same declaration get the same fingerprint whatever
// the whitespace or key order of their files). capeFM's parameters and
// statistics files bind the schema by it.
func Fingerprint(s *Schema) ([32]byte, error) {
	if s == nil {
		return [32]byte{}, errors.New("schema: fingerprint of a nil schema")
	}
	b, err := json.Marshal(s)
	if err != nil {
		return [32]byte{}, fmt.Errorf("schema: fingerprint: %w", err)
	}
	h := sha256.New()
	h.Write([]byte("dplearn/schema/v1\x00"))
	h.Write(b)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}
