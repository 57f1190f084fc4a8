package capefm

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/schema"
)

// fakeHub feeds scripted events to Gather and records what it sends.
type fakeHub struct {
	events chan Event
	mu     sync.Mutex
	sent   map[string][]Message
}

func newFakeHub(evs ...Event) *fakeHub {
	h := &fakeHub{events: make(chan Event, len(evs)+1), sent: map[string][]Message{}}
	for _, e := range evs {
		h.events <- e
	}
	return h
}

func (h *fakeHub) Send(_ context.Context, site string, m Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent[site] = append(h.sent[site], m)
	return nil
}

func (h *fakeHub) Receive(ctx context.Context) (Event, error) {
	select {
	case e := <-h.events:
		return e, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

func (h *fakeHub) SetRound([32]byte, Round) {}

func ann(site, name string, n int64, schema [32]byte) Event {
	return Event{Site: site, Msg: &Announce{Name: name, N: n, Schema: schema, Secure: true}}
}

// TestGather: the roster comes from the announcements, IDs follow the
// expected order (not the order of arrival); a site announcing another
// name than its certificate's, or another schema, is refused and told why;
// a site that disconnects is forgotten; too few sites by the deadline is an
// error naming who is missing.
func TestGather(t *testing.T) {
	expected := []string{"site-1", "site-2", "site-3", "site-4"}
	other := [32]byte{9}
	t.Run("all", func(t *testing.T) {
		hub := newFakeHub(ann("site-3", "site-3", 30, testSchema), ann("site-1", "site-1", 10, testSchema),
			ann("site-4", "site-4", 40, testSchema), ann("site-2", "site-2", 20, testSchema))
		roster, err := Gather(context.Background(), hub, GatherOptions{Expected: expected, MinSites: 4, Timeout: 5 * time.Second, Schema: testSchema})
		if err != nil {
			t.Fatal(err)
		}
		want := []SiteInfo{{"site-1", 1, 10}, {"site-2", 2, 20}, {"site-3", 3, 30}, {"site-4", 4, 40}}
		if !slices.Equal(roster, want) {
			t.Fatalf("roster %v", roster)
		}
	})
	t.Run("refusals", func(t *testing.T) {
		var log []string
		hub := newFakeHub(ann("site-2", "site-3", 20, testSchema), ann("site-1", "site-1", 10, testSchema),
			Event{Site: "site-1", Lost: true}, ann("site-4", "site-4", 40, other), ann("site-3", "site-3", 30, testSchema))
		_, err := Gather(context.Background(), hub, GatherOptions{Expected: expected, MinSites: 2, Timeout: 300 * time.Millisecond, Schema: testSchema,
			OnAnnounce: func(site string, a *Announce, ref error, lost bool) {
				switch {
				case lost:
					log = append(log, site+" lost")
				case ref != nil:
					log = append(log, site+" refused")
				default:
					log = append(log, site+" ok")
				}
			}})
		var ge *GatherError
		if !errors.As(err, &ge) || !slices.Equal(ge.Announced, []string{"site-3"}) || !slices.Equal(ge.Missing, []string{"site-1"}) ||
			!slices.Equal(ge.Refused, []string{"site-2", "site-4"}) {
			t.Fatalf("got %v", err)
		}
		if want := []string{"site-2 refused", "site-1 ok", "site-1 lost", "site-4 refused", "site-3 ok"}; !slices.Equal(log, want) {
			t.Errorf("log %v, want %v", log, want)
		}
		if out := hub.sent["site-2"]; len(out) != 1 || !strings.Contains(out[0].(*Outcome).Text, `announces itself as "site-3" but its certificate says "site-2"`) {
			t.Errorf("site-2 was told %v", out)
		}
		if out := hub.sent["site-4"]; len(out) != 1 || !strings.Contains(out[0].(*Outcome).Text, "schema fingerprint") {
			t.Errorf("site-4 was told %v", out)
		}
		t.Log(err)
	})
}

// TestGatherMinimum: after the deadline, at least MinSites announced sites
// start the fit without the others; fewer is a *GatherError naming them.
func TestGatherMinimum(t *testing.T) {
	expected := []string{"site-1", "site-2", "site-3"}
	hub := newFakeHub(ann("site-1", "site-1", 10, testSchema), ann("site-3", "site-3", 30, testSchema))
	roster, err := Gather(context.Background(), hub, GatherOptions{Expected: expected, MinSites: 2, Timeout: 200 * time.Millisecond, Schema: testSchema})
	if err != nil || len(roster) != 2 || roster[1].ID != 3 {
		t.Fatalf("roster %v, %v", roster, err)
	}
	hub = newFakeHub(ann("site-1", "site-1", 10, testSchema), ann("site-2", "site-2", 10, [32]byte{7}))
	_, err = Gather(context.Background(), hub, GatherOptions{Expected: expected, MinSites: 2, Timeout: 200 * time.Millisecond, Schema: testSchema})
	var ge *GatherError
	if !errors.As(err, &ge) || !slices.Equal(ge.Missing, []string{"site-3"}) || !slices.Equal(ge.Refused, []string{"site-2"}) {
		t.Fatalf("want a GatherError naming site-3 missing and site-2 refused, got %v", err)
	}
	if !strings.Contains(err.Error(), "site-3") || !strings.Contains(err.Error(), "minimum 2") {
		t.Errorf("error: %v", err)
	}
	out := hub.sent["site-2"]
	if len(out) != 1 || !strings.Contains(out[0].(*Outcome).Text, "schema") {
		t.Errorf("site-2 was told %v", out)
	}
}

// TestAnnounceSchemaMismatchNamesField: an announcement whose schema
// differs from the fit's is refused with the column and field that differ
// (from the site's declaration, verified against its fingerprint), not
// only two fingerprints; a declaration that does not hash to the
// announced fingerprint is ignored, and without declarations the reason
// falls back to the fingerprints.
func TestAnnounceSchemaMismatchNamesField(t *testing.T) {
	parse := func(js string) (*schema.Schema, [32]byte, []byte) {
		s, err := schema.Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		fp, err := schema.Fingerprint(s)
		if err != nil {
			t.Fatal(err)
		}
		decl, err := SchemaDeclaration(s)
		if err != nil {
			t.Fatal(err)
		}
		return s, fp, decl
	}
	fit, fitFP, _ := parse(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "age", "range": [0, 100]}, {"name": "sex", "categories": ["f", "m"]}]}`)
	_, ageFP, ageDecl := parse(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "age", "range": [0, 90]}, {"name": "sex", "categories": ["f", "m"]}]}`)
	_, sexFP, sexDecl := parse(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "age", "range": [0, 100]}, {"name": "sex", "categories": ["m", "f"]}]}`)
	for _, tc := range []struct {
		name string
		an   *Announce
		fit  *schema.Schema
		want string
	}{
		{"range", &Announce{Name: "site-b", N: 10, Schema: ageFP, Declaration: ageDecl}, fit,
			`site-b's column "age": range [0,90] differs from the fit's [0,100] (schema fingerprint ` + fmtHash(ageFP) + `, the fit's ` + fmtHash(fitFP) + `)`},
		{"categories", &Announce{Name: "site-b", N: 10, Schema: sexFP, Declaration: sexDecl}, fit,
			`site-b's column "sex": categories ["m","f"] differs from the fit's ["f","m"]`},
		{"forged declaration", &Announce{Name: "site-b", N: 10, Schema: sexFP, Declaration: ageDecl}, fit,
			"its schema fingerprint " + fmtHash(sexFP) + " differs from the fit's " + fmtHash(fitFP) + ": every party must use the same schema file (same features, ranges, categories, target) (its schema declaration does not match its fingerprint: ignored)"},
		{"no declaration", &Announce{Name: "site-b", N: 10, Schema: ageFP}, fit,
			"its schema fingerprint " + fmtHash(ageFP) + " differs from the fit's " + fmtHash(fitFP) + ": every party must"},
		{"aggregator without schema", &Announce{Name: "site-b", N: 10, Schema: ageFP, Declaration: ageDecl}, nil,
			"its schema fingerprint " + fmtHash(ageFP) + " differs"},
	} {
		// Through the wire, as a transport carries it.
		b, err := tc.an.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		m, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		reason := gatherReason(t, GatherOptions{Schema: fitFP, Declaration: tc.fit}, "site-b", m.(*Announce))
		if !strings.Contains(reason, tc.want) {
			t.Errorf("%s: refusal\n%s\nwant it to contain\n%s", tc.name, reason, tc.want)
		}
	}
}
