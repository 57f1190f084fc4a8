package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// outputFormat is the value of a command's --format flag.
type outputFormat string

const (
	formatText outputFormat = "text"
	formatJSON outputFormat = "json"
)

// addFormatFlag registers --format on cmd and returns a getter that
// validates it.
func addFormatFlag(cmd *cobra.Command) func() (outputFormat, error) {
	f := cmd.Flags().String("format", "text", "output format: text (words) or json (one JSON object)")
	return func() (outputFormat, error) {
		switch outputFormat(*f) {
		case formatText, formatJSON:
			return outputFormat(*f), nil
		}
		return "", fmt.Errorf("--format %q: want text or json", *f)
	}
}

// writeJSON writes v as one indented JSON object.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// stderrProgress returns stderr when it is a terminal (for progress lines),
// nil otherwise.
func stderrProgress(cmd *cobra.Command) io.Writer {
	w := cmd.ErrOrStderr()
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return w
}

// requireFlags fails with one message naming every missing required flag.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing required flag(s): %v (see %s --help)", missing, cmd.CommandPath())
	}
	return nil
}
