package capefm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dplearn/dplearn/schema"
)

// Announce returns the site's announcement: what it sends when it connects,
// before any Offer (see Gather).
func (s *Site) Announce() *Announce {
	a := &Announce{Name: s.cfg.Name, N: s.n, Schema: s.cfg.Schema, Secure: s.cfg.Source.Secure(),
		Unit: s.cfg.Unit, MaxRows: s.cfg.MaxRows}
	if len(s.cfg.Declaration) <= MaxDeclaration {
		a.Declaration = slices.Clone(s.cfg.Declaration)
	}
	return a
}

// SchemaDeclaration returns the encoding of s that schema.Fingerprint
// hashes, for SiteConfig.Declaration.
func SchemaDeclaration(s *schema.Schema) ([]byte, error) {
	if s == nil {
		return nil, errors.New("capefm: no schema")
	}
	return json.Marshal(s)
}

// declarationFingerprint parses a declaration and returns its schema
// fingerprint.
func declarationFingerprint(b []byte) ([32]byte, error) {
	s, err := schema.Parse(b)
	if err != nil {
		return [32]byte{}, err
	}
	return schema.Fingerprint(s)
}

// schemaMismatch explains an announcement whose schema fingerprint differs
// from the fit's: by column and field when the site sent its declaration
// (checked against its fingerprint, so the words describe the schema the
// site actually agreed by) and the aggregator knows the fit's schema;
// otherwise by fingerprint.
func schemaMismatch(site string, a *Announce, fit *schema.Schema, fitFP [32]byte) string {
	base := fmt.Sprintf("its schema fingerprint %s differs from the fit's %s", fmtHash(a.Schema), fmtHash(fitFP))
	const advice = ": every party must use the same schema file (same features, ranges, categories, target)"
	if fit == nil || len(a.Declaration) == 0 {
		return base + advice
	}
	theirs, err := schema.Parse(a.Declaration)
	if err != nil {
		return base + advice + fmt.Sprintf(" (its schema declaration cannot be read: %v)", err)
	}
	if fp, err := schema.Fingerprint(theirs); err != nil || fp != a.Schema {
		return base + advice + " (its schema declaration does not match its fingerprint: ignored)"
	}
	d := schema.Diff(theirs, fit)
	if d == nil {
		return base + advice
	}
	where := "schema"
	if d.Column != "" {
		where = fmt.Sprintf("column %q", d.Column)
	}
	return fmt.Sprintf("%s's %s: %s %s differs from the fit's %s (schema fingerprint %s, the fit's %s)%s",
		site, where, d.Field, d.A, d.B, fmtHash(a.Schema), fmtHash(fitFP), advice)
}

// GatherOptions configures Gather.
type GatherOptions struct {
	// Expected lists the sites that may take part (the aggregator's roster
	// of names), in the order that assigns their IDs 1, 2, ...: a site's ID
	// does not depend on when it connected.
	Expected []string
	// MinSites is the fewest announced sites the fit may start with once
	// Timeout has passed (≥ 2).
	MinSites int
	// Timeout bounds the wait for the expected sites. Gather returns as soon
	// as every expected site has announced (or been refused).
	Timeout time.Duration
	// Schema is the fit's schema fingerprint: an announcement with another
	// one is refused.
	Schema [32]byte
	// Declaration, if set, is the fit's schema (it must fingerprint to
	// Schema): a refusal then names the column and field that differ from
	// the site's declaration.
	Declaration *schema.Schema
	// Unit and MaxRows are the fit's privacy unit and K (both zero: row
	// level): an announcement with another unit or K is refused, naming
	// the field.
	Unit    string
	MaxRows int
	// KnownN optionally gives a site's N_s in advance (by name): an
	// announcement with another N_s is refused.
	KnownN map[string]int64
	// OnAnnounce, if set, is called for every announcement, with the
	// refusal (an *AnnounceRefusal) or nil when it was accepted, and with
	// Lost set when an announced site disconnected before the roster was
	// fixed.
	OnAnnounce func(site string, a *Announce, refusal error, lost bool)
}

// AnnounceRefusal is an announcement the aggregator refused; the site is
// told (Outcome) and left out of the roster.
type AnnounceRefusal struct {
	Site   string // the authenticated name of the sender
	Reason string
}

func (e *AnnounceRefusal) Error() string {
	return fmt.Sprintf("capefm: announcement from %s refused: %s", e.Site, e.Reason)
}

// GatherError reports that too few sites announced in time.
type GatherError struct {
	Announced, Missing, Refused []string
	MinSites                    int
	Timeout                     time.Duration
	Cause                       error
}

func (e *GatherError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "capefm: %d of %d expected sites announced within %v, fewer than the minimum %d", len(e.Announced), len(e.Announced)+len(e.Missing)+len(e.Refused), e.Timeout, e.MinSites)
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "; not announced (never connected, or disconnected before the start): %s", strings.Join(e.Missing, ", "))
	}
	if len(e.Refused) > 0 {
		fmt.Fprintf(&b, "; refused: %s", strings.Join(e.Refused, ", "))
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	return b.String()
}

func (e *GatherError) Unwrap() error { return e.Cause }

// Gather is the aggregator's announce step, before the first attempt: it
// waits for the announcements of the expected sites over hub, checks each
// (the announced name must be the authenticated sender's, one of Expected,
// with the fit's schema fingerprint and N_s ≥ 1), tells a refused site why
// (an Outcome) and leaves it out, forgets a site that disconnects before
// the roster is fixed, and returns the roster, sorted by ID, once every
// expected site has announced or been refused, or when Timeout passes with
// at least MinSites announced; otherwise a *GatherError naming the missing
// and refused sites. N_s is public under bounded DP, so announcing it
// reveals nothing the guarantee does not already treat as public.
func Gather(ctx context.Context, hub Hub, opt GatherOptions) ([]SiteInfo, error) {
	if len(opt.Expected) < 2 || len(opt.Expected) > MaxSites {
		return nil, fmt.Errorf("capefm: gather: %d expected sites, want 2 to %d", len(opt.Expected), MaxSites)
	}
	ids := make(map[string]uint32, len(opt.Expected))
	for i, name := range opt.Expected {
		if !ValidName(name) {
			return nil, fmt.Errorf("capefm: gather: invalid site name %q", name)
		}
		if ids[name] != 0 {
			return nil, fmt.Errorf("capefm: gather: site %s listed twice", name)
		}
		ids[name] = uint32(i + 1)
	}
	if opt.Declaration != nil {
		if fp, err := schema.Fingerprint(opt.Declaration); err != nil || fp != opt.Schema {
			return nil, fmt.Errorf("capefm: gather: the fit's schema does not fingerprint to %s", fmtHash(opt.Schema))
		}
	}
	if opt.MinSites < 2 || opt.MinSites > len(opt.Expected) {
		return nil, fmt.Errorf("capefm: gather: minimum sites %d, want 2 to %d", opt.MinSites, len(opt.Expected))
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	notify := func(site string, a *Announce, err error, lost bool) {
		if opt.OnAnnounce != nil {
			opt.OnAnnounce(site, a, err, lost)
		}
	}
	announced := map[string]*Announce{}
	refused := map[string]bool{}
	done := func() bool { return len(announced)+len(refused) == len(opt.Expected) }
	hub.SetRound([32]byte{}, RoundHello)
	wctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	var cause error
	for !done() {
		ev, err := hub.Receive(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			cause = err
			break
		}
		if ev.Lost {
			if a := announced[ev.Site]; a != nil {
				delete(announced, ev.Site)
				notify(ev.Site, a, nil, true)
			}
			continue
		}
		a, ok := ev.Msg.(*Announce)
		if !ok {
			if ev.Msg != nil {
				notify(ev.Site, nil, &AnnounceRefusal{Site: ev.Site, Reason: fmt.Sprintf("a %s message before the fit started (ignored)", ev.Msg.Type())}, false)
			}
			continue
		}
		reason := ""
		switch {
		case ids[ev.Site] == 0:
			reason = fmt.Sprintf("%s is not one of the expected sites (%s)", ev.Site, strings.Join(opt.Expected, ", "))
		case a.Name != ev.Site:
			reason = fmt.Sprintf("it announces itself as %q but its certificate says %q: a site takes part only under the name in its certificate", a.Name, ev.Site)
		case a.Schema != opt.Schema:
			reason = schemaMismatch(ev.Site, a, opt.Declaration, opt.Schema)
		case a.Unit != opt.Unit:
			reason = fmt.Sprintf("its privacy unit %q differs from the fit's %q: every site must bound its rows per unit of the same column", a.Unit, opt.Unit)
		case a.MaxRows != opt.MaxRows:
			reason = fmt.Sprintf("its max rows per unit K = %d differs from the fit's K = %d: every site must keep at most the same K rows per unit", a.MaxRows, opt.MaxRows)
		case opt.KnownN[ev.Site] != 0 && opt.KnownN[ev.Site] != a.N:
			reason = fmt.Sprintf("it announces N = %d rows, the aggregator was told %d", a.N, opt.KnownN[ev.Site])
		}
		if reason != "" {
			ref := &AnnounceRefusal{Site: ev.Site, Reason: reason}
			delete(announced, ev.Site)
			if ids[ev.Site] != 0 {
				refused[ev.Site] = true
			}
			notify(ev.Site, a, ref, false)
			if err := hub.Send(ctx, ev.Site, &Outcome{Text: "the aggregator refused your announcement: " + reason}); err != nil && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			continue
		}
		c := *a
		announced[ev.Site] = &c
		delete(refused, ev.Site)
		notify(ev.Site, &c, nil, false)
	}
	var roster []SiteInfo
	var missing, refusedNames []string
	for _, name := range opt.Expected {
		switch {
		case announced[name] != nil:
			roster = append(roster, SiteInfo{Name: name, ID: ids[name], N: announced[name].N})
		case refused[name]:
			refusedNames = append(refusedNames, name)
		default:
			missing = append(missing, name)
		}
	}
	if len(roster) < opt.MinSites {
		names := make([]string, len(roster))
		for i, s := range roster {
			names[i] = s.Name
		}
		if errors.Is(cause, context.DeadlineExceeded) {
			cause = nil
		}
		return nil, &GatherError{Announced: names, Missing: missing, Refused: refusedNames, MinSites: opt.MinSites, Timeout: opt.Timeout, Cause: cause}
	}
	slices.SortFunc(roster, func(a, b SiteInfo) int { return int(a.ID) - int(b.ID) })
	return roster, nil
}
