// Package partyname is the one rule for the name of a party (a capeFM
// site, a DPPP teacher, a certificate's subject): certs.ValidateName,
// capefm.ValidName and dppp's Config.Validate all apply it, so that an
// in-process run refuses exactly the names a deployment refuses.
package partyname

import (
	"errors"
	"fmt"
	"strings"
)

// MaxLen is the longest party name, in bytes.
const MaxLen = 64

// Reserved names the certificate authority's directory.
const Reserved = "ca"

// Validate reports whether name is a valid party name: 1 to MaxLen
// characters from a-z, 0-9, '-' and '.', beginning and ending with a
// letter or digit, without "..", and not Reserved.
func Validate(name string) error {
	if name == "" {
		return errors.New("empty party name")
	}
	if len(name) > MaxLen {
		return fmt.Errorf("party name %q has %d characters, at most %d allowed", name, len(name), MaxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' || c == '.':
			if i == 0 || i == len(name)-1 {
				return fmt.Errorf("party name %q must begin and end with a letter or digit", name)
			}
		default:
			return fmt.Errorf("party name %q: character %q not allowed (use a-z, 0-9, '-' and '.')", name, c)
		}
	}
	if strings.Contains(name, "..") {
		return fmt.Errorf("party name %q contains \"..\"", name)
	}
	if name == Reserved {
		return fmt.Errorf("party name %q is reserved (it names the CA's directory)", name)
	}
	return nil
}
