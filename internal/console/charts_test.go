package console

import (
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

func fetch(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestChartsPage(t *testing.T) {
	f := newFake()
	at := time.Now().Add(-time.Minute).UnixMilli()
	point := func(i int, writes float64) slotstore.HistoryPoint {
		return slotstore.HistoryPoint{AtMs: at + int64(i)*10_000, Writes: writes, Reads: 2 * writes, P99Ms: 3, CPUCores: .25,
			RSSBytes: 64 << 20, DiskBytes: 20 << 20, Goroutines: 300, Errors: map[string]float64{"409": 1}}
	}
	f.Histories = map[slotstore.NodeID]slotstore.NodeHistory{
		1: {Node: 1, Version: "v1.0.0", StartedAtMs: at - 60_000, StepMs: 10_000, Points: []slotstore.HistoryPoint{point(0, 10), point(1, 40), point(2, 1234)}},
		3: {Node: 3, Version: "v1.0.0", StartedAtMs: at, StepMs: 10_000}, // no point yet
	} // node 2 answers nothing
	ts := httptest.NewServer(Handler(Config{Source: f}))
	defer ts.Close()
	for _, path := range []string{"/console/charts", "/console/fragments/charts"} {
		code, body := fetch(t, ts.URL+path)
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		doc := parse(t, body)
		if got := text(one(t, doc, "chart-node-1")); !strings.Contains(got, "v1.0.0") || !strings.Contains(got, "1234") || !strings.Contains(got, "2468") {
			t.Fatalf("node 1 row: %q", got)
		}
		if got := text(one(t, doc, "chart-node-2")); !strings.Contains(got, "no history") {
			t.Fatalf("node 2 row: %q", got)
		}
		if got := text(one(t, doc, "chart-node-3")); !strings.Contains(got, "no point yet") {
			t.Fatalf("node 3 row: %q", got)
		}
		for _, id := range []string{"writes", "reads", "p99", "errors", "leader-changes", "apply-lag", "cpu", "rss", "disk", "goroutines"} {
			ch := one(t, doc, "chart-"+id)
			if id == "leader-changes" || id == "apply-lag" {
				continue // zeros: a flat line
			}
			lines := byTestID(ch, "line-"+id)
			if len(lines) != 1 || len(strings.Fields(attr(lines[0], "points"))) != 3 {
				t.Fatalf("chart %s: %d lines %v", id, len(lines), attr(lines[0], "points"))
			}
		}
		// Writes: 1234 is the top point, the axis rounds up to 2000.
		w := one(t, doc, "chart-writes")
		if got := text(w); !strings.Contains(got, "2000") || !strings.Contains(got, "node 1: 1234") {
			t.Fatalf("writes chart: %q", got)
		}
		if got := text(one(t, doc, "chart-errors")); !strings.Contains(got, "409: 1.00") {
			t.Fatalf("errors chart: %q", got)
		}
	}
}

func TestHeatPage(t *testing.T) {
	f := newFake()
	now := time.Now()
	step := int64(10_000)
	first := now.Add(-40*time.Second).UnixMilli() / step * step
	col := func(i int, hot uint32) slotstore.HeatColumn {
		c := slotstore.HeatColumn{AtMs: first + int64(i)*step, Writes: make([]uint32, slotstore.HashSlotCount), Reads: make([]uint32, slotstore.HashSlotCount)}
		for s := range c.Writes {
			c.Writes[s] = 10
		}
		c.Writes[77] = hot
		c.Reads[5] = 30
		return c
	}
	// Four steps, the third missing (no report): slot 77 written hot.
	f.Heat = slotstore.SlotHeat{StepMs: step, Aggregator: 3, Columns: []slotstore.HeatColumn{col(0, 10), col(1, 5000), col(3, 9000)}}
	hs := slotstore.HashSlot(77)
	f.PutTask(slotstore.Task{ID: 12, Kind: "slot_migration", Group: 2, ToGroup: 1, HashSlot: &hs, Status: "running",
		CreatedAtMs: first + 15_000, UpdatedAtMs: first + 20_000})
	f.PutTask(slotstore.Task{ID: 13, Kind: "group_split", Group: 1, ToGroup: 4, Moved: 64, Status: "done",
		CreatedAtMs: first + 5_000, UpdatedAtMs: first + 30_000})
	f.PutTask(slotstore.Task{ID: 14, Kind: "replica_move", Group: 1, From: 1, To: 2, Status: "done", CreatedAtMs: first, UpdatedAtMs: first})
	ts := httptest.NewServer(Handler(Config{Source: f}))
	defer ts.Close()

	code, body := fetch(t, ts.URL+"/console/heat")
	if code != 200 {
		t.Fatalf("heat page: %d %s", code, body)
	}
	doc := parse(t, body)
	one(t, doc, "heat-map")
	// The first row of the hottest slots is slot 77 at (10+5000+9000) over
	// the three steps counted: 467 writes/s.
	if row := one(t, doc, "hot-slots").LastChild.FirstChild; attr(row, "data-testid") != "hot-slot-77" || !strings.Contains(text(row), "467") {
		t.Fatalf("hottest slot: %s %q", attr(row, "data-testid"), text(row))
	}
	if mv := one(t, doc, "heat-move-12"); mv.Data != "circle" {
		t.Fatalf("slot migration marked by a %s", mv.Data)
	}
	if mv := one(t, doc, "heat-move-13"); mv.Data != "line" {
		t.Fatalf("split marked by a %s", mv.Data)
	}
	if n := len(byTestID(doc, "heat-move-14")); n != 0 {
		t.Fatalf("a replica move is no hash-slot move: %d marks", n)
	}

	// The image: 180 columns of 4 × 2 pixel cells, the newest at the right;
	// slot 77's cell in the last column is the darkest, an empty step is
	// the background.
	resp, err := http.Get(ts.URL + "/console/heat.png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != heatMinColumns*heatCellW || b.Dy() != slotstore.HashSlotCount*heatCellH {
		t.Fatalf("image %v", b)
	}
	last := (heatMinColumns - 1) * heatCellW
	hot, warm, none := img.At(last, 77*heatCellH), img.At(last, 76*heatCellH), img.At(last-heatCellW, 77*heatCellH)
	if hot != heatColor(9000, 9000) || warm != heatColor(10, 9000) || none != heatColor(0, 9000) || hot == warm {
		t.Fatalf("cells: hot %v warm %v empty %v", hot, warm, none)
	}
	// Reads: slot 5.
	code, body = fetch(t, ts.URL+"/console/heat?by=reads")
	if code != 200 || !strings.Contains(text(one(t, parse(t, body), "hot-slot-5")), "5") {
		t.Fatalf("by reads: %d", code)
	}

	// No controller leader: the page says so, the image is the error JSON.
	f.NoControllerLeader = true
	_, body = fetch(t, ts.URL+"/console/heat")
	if got := text(one(t, parse(t, body), "heat-error")); !strings.Contains(got, "controller leader") {
		t.Fatalf("no leader: %q", got)
	}
	if code, body := fetch(t, ts.URL+"/console/heat.png"); code != http.StatusServiceUnavailable {
		t.Fatalf("image without a controller leader: %d %s", code, body)
	}
}
