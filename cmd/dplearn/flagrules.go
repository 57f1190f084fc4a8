package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/secagg"
)

// Flag rules checked before a command listens, reads or spends anything,
// so that a value the protocol would refuse (or silently replace by a
// default) fails at once, in the words of the flag, instead of after every
// party has joined.

// flagRule checks one flag of cmd; it returns nil when the flag is absent.
type flagRule func(cmd *cobra.Command) error

func checkFlagRules(cmd *cobra.Command, rules ...flagRule) error {
	for _, r := range rules {
		if err := r(cmd); err != nil {
			return err
		}
	}
	return nil
}

// openUnitFlag: a float64 flag in (0, 1).
func openUnitFlag(name string) flagRule {
	return func(cmd *cobra.Command) error {
		v, err := cmd.Flags().GetFloat64(name)
		if err != nil {
			return nil
		}
		if !(v > 0 && v < 1) {
			return fmt.Errorf("--%s must be in (0, 1), got %v", name, v)
		}
		return nil
	}
}

// positiveDurationFlag: a duration flag > 0; with zeroAllowed, 0 is
// allowed too (it then means what the flag's documentation says).
func positiveDurationFlag(name string, zeroAllowed bool) flagRule {
	return func(cmd *cobra.Command) error {
		v, err := cmd.Flags().GetDuration(name)
		if err != nil {
			return nil
		}
		if v < 0 || (v == 0 && !zeroAllowed) {
			want := "> 0"
			if zeroAllowed {
				want = "≥ 0"
			}
			return fmt.Errorf("--%s must be %s, got %v", name, want, v)
		}
		return nil
	}
}

// minIntFlag: an int flag ≥ min.
func minIntFlag(name string, min int) flagRule {
	return func(cmd *cobra.Command) error {
		v, err := cmd.Flags().GetInt(name)
		if err != nil {
			return nil
		}
		if v < min {
			return fmt.Errorf("--%s must be at least %d, got %d", name, min, v)
		}
		return nil
	}
}

// namesFlag: a list flag whose every element is non-empty (after trimming
// spaces) and given once: "a,,b" is refused instead of becoming "a,b".
func namesFlag(name string) flagRule {
	return func(cmd *cobra.Command) error {
		v, err := cmd.Flags().GetStringSlice(name)
		if err != nil {
			return nil
		}
		seen := map[string]bool{}
		for i, x := range v {
			x = strings.TrimSpace(x)
			if x == "" {
				return fmt.Errorf("--%s: name %d of %d is empty (%q); list each name once, separated by single commas", name, i+1, len(v), strings.Join(v, ","))
			}
			if seen[x] {
				return fmt.Errorf("--%s: %s is listed twice", name, x)
			}
			seen[x] = true
		}
		return nil
	}
}

// nonEmptyStringFlag: a string flag that, when given, is not blank.
func nonEmptyStringFlag(name string) flagRule {
	return func(cmd *cobra.Command) error {
		v, err := cmd.Flags().GetString(name)
		if err != nil || !cmd.Flags().Changed(name) {
			return nil
		}
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("--%s is empty; say what it is", name)
		}
		return nil
	}
}

// checkCapeServeFlags checks every flag of `cape serve` that the protocol
// would otherwise check only after the sites joined, or replace silently:
// --sites (no empty or repeated name), --split in (0, 1), --noise-ratio in
// [capefm.MinNoiseRatio, capefm.MaxNoiseRatio], --colluders −1 (the
// default rule) or at most what secure aggregation of all --sites hides
// (capefm) or fewer than the sites (baselines), --max-attempts ≥ 1,
// --round-timeout and --reconnect-grace > 0, --join-timeout ≥ 0 (0: the
// round timeout), --min-sites ≥ 0.
func checkCapeServeFlags(cmd *cobra.Command) error {
	err := checkFlagRules(cmd, namesFlag("sites"), openUnitFlag("split"),
		minIntFlag("colluders", -1), minIntFlag("max-attempts", 1), minIntFlag("min-sites", 0),
		positiveDurationFlag("round-timeout", false), positiveDurationFlag("join-timeout", true),
		positiveDurationFlag("reconnect-grace", false))
	if err != nil {
		return err
	}
	fl := cmd.Flags()
	mech, _ := fl.GetString("mechanism")
	if r, err := fl.GetFloat64("noise-ratio"); err == nil && mech == string(capefm.CapeFM) {
		if !(r >= capefm.MinNoiseRatio && r <= capefm.MaxNoiseRatio) || math.IsNaN(r) {
			return fmt.Errorf("--noise-ratio must be in [%g, %g], got %v", capefm.MinNoiseRatio, capefm.MaxNoiseRatio, r)
		}
	}
	sites, _ := fl.GetStringSlice("sites")
	if c, err := fl.GetInt("colluders"); err == nil && c >= 0 && len(sites) >= 2 {
		S := len(sites)
		limit := S - 1
		if mech == string(capefm.CapeFM) {
			limit = secagg.DefaultThreshold(S) - 1
		}
		if c > limit {
			return fmt.Errorf("--colluders %d: with %d sites, at most %d (capefm's secure aggregation of S sites hides the noise shares from at most ⌈S/3⌉−1 colluders; the baselines need at least one honest site)", c, S, limit)
		}
	}
	return nil
}
