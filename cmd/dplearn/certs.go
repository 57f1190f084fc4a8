package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/spf13/cobra"
)

// newCertsCmd builds `dplearn certs` (a CA and one certificate per party)
// and `dplearn certs add` (one more party under an existing CA).
func newCertsCmd() *cobra.Command {
	var (
		out   string
		names []string
		opts  certFlags
	)
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Make a CA and one certificate per party for the networked protocols",
		Long: `certs provisions the identities of the networked protocols (capeFM, DPPP):
a certificate authority (CA) and, for each name in --names, a key pair and a
certificate signed by the CA. Parties authenticate each other with mutual TLS
1.3: the aggregator accepts only certificates from this CA whose party name is
in its roster, and reads every message's sender from the certificate.

It writes, under --out DIR (created with mode 0700):

  DIR/ca/ca.crt          the CA certificate
  DIR/ca/ca.key          the CA private key (0600). Keep it OFFLINE: whoever
                         holds it can issue a certificate for any party name.
  DIR/NAME/party.crt     NAME's certificate
  DIR/NAME/party.key     NAME's private key (0600)
  DIR/NAME/ca.crt        a copy of the CA certificate

Copy DIR/NAME, and only it, to the machine of party NAME (e.g. with scp -r);
it is everything that party needs. No existing file is ever overwritten.

Party names: 1 to 64 characters from a-z, 0-9, '-' and '.', beginning and
ending with a letter or digit ("ca" is reserved). The name is bound to the
certificate as the DNS name NAME.dplearn.invalid and the common name NAME;
parties check names, not addresses, so certificates need no host names.
--hosts adds host names and IP addresses for other TLS tools.

Add a party later, without reissuing the others:
  dplearn certs add --ca DIR --name site-4

With --format json, prints one object with keys: ca (dir, subject,
not_after) and parties (name, dir, not_after).

Example:
  dplearn certs --out pki --names aggregator,site-1,site-2,site-3`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&out, "out", "", "output directory (created with mode 0700)")
	f.StringSliceVar(&names, "names", nil, "comma-separated party names, e.g. aggregator,site-1,site-2")
	opts.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fmtOut, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "out", "names"); err != nil {
			return err
		}
		o, err := opts.options()
		if err != nil {
			return err
		}
		w, err := certs.Create(out, trimAll(names), o)
		if err != nil {
			return err
		}
		return printWritten(cmd.OutOrStdout(), fmtOut, w, out, true)
	}
	cmd.AddCommand(newCertsAddCmd())
	return cmd
}

func newCertsAddCmd() *cobra.Command {
	var (
		dir, name string
		opts      certFlags
	)
	cmd := &cobra.Command{
		Use:   "add",
		Short: "Issue a certificate for one more party under an existing CA",
		Long: `add issues a key pair and a certificate for one more party, signed by the CA
that 'dplearn certs' made in --ca DIR (it reads DIR/ca/ca.key), and writes
DIR/NAME/party.crt, DIR/NAME/party.key (0600) and DIR/NAME/ca.crt. The other
parties' certificates are not touched and stay valid; the aggregator accepts
the new party once its roster names it. A party certificate never outlives
the CA: its expiry is capped at the CA's.

With --format json, prints the same object as 'dplearn certs'.

Example:
  dplearn certs add --ca pki --name site-4`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&dir, "ca", "", "the directory 'dplearn certs --out' wrote (holding ca/ca.key)")
	f.StringVar(&name, "name", "", "the new party's name")
	opts.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fmtOut, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "ca", "name"); err != nil {
			return err
		}
		o, err := opts.options()
		if err != nil {
			return err
		}
		w, err := certs.Add(dir, strings.TrimSpace(name), o)
		if err != nil {
			return err
		}
		return printWritten(cmd.OutOrStdout(), fmtOut, w, dir, false)
	}
	return cmd
}

// certFlags are the issuance flags shared by certs and certs add.
type certFlags struct {
	days  int
	hosts []string
}

func (c *certFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&c.days, "days", 365, "validity of the certificates in days (1 to 7300)")
	f.StringSliceVar(&c.hosts, "hosts", nil, "extra host names and IP addresses to put in the party certificates (not needed by dplearn), e.g. 127.0.0.1,localhost")
}

func (c *certFlags) options() (certs.Options, error) {
	if c.days < 1 || c.days > 7300 {
		return certs.Options{}, fmt.Errorf("--days %d: want 1 to 7300", c.days)
	}
	return certs.Options{Validity: time.Duration(c.days) * 24 * time.Hour, Hosts: trimAll(c.hosts)}, nil
}

func trimAll(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func printWritten(w io.Writer, format outputFormat, wr *certs.Written, dir string, newCA bool) error {
	if len(wr.Parties) == 0 {
		return errors.New("certs: nothing issued")
	}
	const day = time.DateOnly
	if format == formatJSON {
		type party struct {
			Name     string `json:"name"`
			Dir      string `json:"dir"`
			NotAfter string `json:"not_after"`
		}
		ps := make([]party, len(wr.Parties))
		for i, p := range wr.Parties {
			ps[i] = party{p.Name, p.Dir, p.NotAfter.UTC().Format(time.RFC3339)}
		}
		return writeJSON(w, map[string]any{
			"ca": map[string]string{
				"dir":       wr.CADir,
				"subject":   wr.CA.Subject,
				"not_after": wr.CA.NotAfter.UTC().Format(time.RFC3339),
			},
			"parties": ps,
		})
	}
	if newCA {
		fmt.Fprintf(w, "Made the CA %q (valid until %s) and %d party certificate(s):\n", wr.CA.Subject, wr.CA.NotAfter.UTC().Format(day), len(wr.Parties))
	} else {
		fmt.Fprintf(w, "Issued %d party certificate(s) under the CA %q (valid until %s):\n", len(wr.Parties), wr.CA.Subject, wr.CA.NotAfter.UTC().Format(day))
	}
	width := 0
	for _, p := range wr.Parties {
		width = max(width, len(p.Dir))
	}
	for _, p := range wr.Parties {
		fmt.Fprintf(w, "  %-*s  party %s, valid until %s: copy this directory to %s's machine\n", width+1, p.Dir+string(filepath.Separator), p.Name, p.NotAfter.UTC().Format(day), p.Name)
	}
	if newCA {
		fmt.Fprintf(w, "CA key: %s. Keep it offline: it can issue a certificate for any name.\n", filepath.Join(wr.CADir, certs.CAKeyFile))
		fmt.Fprintf(w, "Add a party later with: dplearn certs add --ca %s --name NAME\n", dir)
	} else {
		fmt.Fprintln(w, "Add the new name to the aggregator's roster; the other parties need nothing.")
	}
	return nil
}
