package benchrun

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"
)

func TestRunReportIsWellFormed(t *testing.T) {
	cfg := Config{
		Dir:        t.TempDir(),
		Fsync:      []string{"none", "batch", "chunk"},
		BatchSizes: []int{1, 16},
		Sizes:      []int{100},
		Count:      50,
		Rounds:     2,
	}
	var calls []Progress
	cfg.Progress = func(p Progress) { calls = append(calls, p) }
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := cfg.Cases()
	if len(rep.Results) != len(want) || len(want) != 2*3*2 {
		t.Fatalf("%d results for %d cases", len(rep.Results), len(want))
	}
	for i, r := range rep.Results {
		c := want[i]
		if r.Op != c.Op || r.Fsync != c.Fsync || r.BatchSize != c.BatchSize || r.PayloadBytes != 100 || r.Name != c.Name() {
			t.Errorf("result %d is %+v, want case %+v", i, r, c)
		}
		if r.MsgsPerSec <= 0 || r.RawMsgsPerSec <= 0 || r.RatioToRaw <= 0 || r.MBPerSec <= 0 {
			t.Errorf("%s %s: rates not positive: %+v", r.Op, r.Name, r)
		}
		if r.P50BatchMs <= 0 || r.P99BatchMs < r.P50BatchMs {
			t.Errorf("%s %s: p50 %v p99 %v", r.Op, r.Name, r.P50BatchMs, r.P99BatchMs)
		}
		if r.Rounds != 2 || len(r.RoundsMsgsPerSec) != 2 || r.Count != 50 {
			t.Errorf("%s %s: rounds %d %v count %d", r.Op, r.Name, r.Rounds, r.RoundsMsgsPerSec, r.Count)
		}
		if r.Op == OpProduce && r.Fsync == "batch" {
			if len(r.RawStrategies) != 3 || r.RawStrategies[r.RawArm] != r.RawMsgsPerSec {
				t.Errorf("%s: raw strategies %v, best %s", r.Name, r.RawStrategies, r.RawArm)
			}
		} else if r.RawArm != RawArmPrefix {
			t.Errorf("%s %s: raw arm %q", r.Op, r.Name, r.RawArm)
		}
	}
	if len(calls) != len(want)*2+1 || calls[len(calls)-1].Done != calls[len(calls)-1].Total {
		t.Errorf("progress calls: %d, last %+v", len(calls), calls[len(calls)-1])
	}
	if rep.Machine.FSType == "" || rep.Machine.FSMagic == "" {
		t.Errorf("machine: %+v", rep.Machine)
	}

	// JSON: one object with a results array carrying the documented keys.
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"op", "fsync", "batch_size", "payload_bytes", "msgs_per_sec", "mb_per_sec",
		"p50_batch_ms", "p99_batch_ms", "raw_msgs_per_sec", "ratio_to_raw"} {
		if _, ok := doc.Results[0][k]; !ok {
			t.Errorf("JSON result lacks %q", k)
		}
	}

	// Text: a header and one row per result.
	buf.Reset()
	if err := rep.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	if s := buf.String(); !strings.Contains(s, "msgs/s") || strings.Count(s, "produce") < 6 {
		t.Errorf("text report:\n%s", s)
	}

	// SVG: well-formed XML with one bar per result.
	buf.Reset()
	if err := rep.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	checkXML(t, buf.Bytes())
	if n := strings.Count(buf.String(), "<rect x="); n < len(rep.Results) {
		t.Errorf("SVG has %d bars for %d results", n, len(rep.Results))
	}
}

func checkXML(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b)
		}
	}
}

func TestRunRefusesBadCases(t *testing.T) {
	for _, cfg := range []Config{
		{Dir: t.TempDir(), Fsync: []string{"sometimes"}},
		{Dir: t.TempDir(), BatchSizes: []int{0}},
		{Dir: t.TempDir(), Layouts: []string{"deep"}},
		{Dir: t.TempDir(), Backends: []string{"s3"}},
		{},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%+v) succeeded", cfg)
		}
	}
}

func TestScaleSmoke(t *testing.T) {
	rs, err := Scale(context.Background(), ScaleConfig{Dir: t.TempDir(), Backlogs: []int{1200}, Layouts: []string{LayoutSharded, LayoutFlat},
		PayloadBytes: 100, Sidecar: true, Fsync: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 {
		t.Fatalf("%d results", len(rs))
	}
	for _, r := range rs {
		if r.ProduceUsPerMsg <= 0 || r.DrainUsPerMsg <= 0 || r.DrainPeakRSSMiB <= 0 || r.ListEntries == 0 {
			t.Errorf("%+v", r)
		}
	}
	if rs[0].ListEntries != 1000*2 || rs[1].ListEntries < 1200*2 {
		t.Errorf("listed %d and %d entries", rs[0].ListEntries, rs[1].ListEntries)
	}
	var buf bytes.Buffer
	if err := WriteScaleText(&buf, rs); err != nil || !strings.Contains(buf.String(), "drain peak") {
		t.Errorf("%v\n%s", err, buf.String())
	}
}

func TestHandoffSmoke(t *testing.T) {
	for _, wake := range []bool{true, false} {
		r, err := Handoff(context.Background(), HandoffConfig{Dir: t.TempDir(), Count: 5, Wake: wake, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if r.Count != 5 || r.P99FromWriteMs <= 0 || r.P99FromAckMs < r.P50FromAckMs {
			t.Errorf("%+v", r)
		}
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"100", 100, false}, {"100B", 100, false}, {"1KiB", 1024, false}, {"64k", 64 << 10, false},
		{"1MiB", 1 << 20, false}, {" 2 MB", 2 << 20, false}, {"", 0, true}, {"KiB", 0, true}, {"3 parsecs", 0, true},
	} {
		got, err := ParseSize(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v", tc.in, got, err)
		}
	}
	for n, want := range map[int64]string{0: "0B", 100: "100B", 1023: "1023B", 1024: "1KiB", 64 << 10: "64KiB", 1 << 20: "1MiB",
		1500: "1.5KiB", 1536: "1.5KiB", 5_000_000: "4.8MiB", 3 << 30: "3GiB", 1<<62 + 1<<61: "6EiB", 1<<62 + 1<<59: "4.5EiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
