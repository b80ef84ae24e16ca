// Package console serves the operations console at /console. For now it is
// a single read-only overview page rendered on the server from a Source; the
// full console (groups, hash-slot map, tasks, actions) builds on it.
package console

import (
	"html/template"
	"io/fs"
	"net/http"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/web"
)

// GroupRow is one slot group as the overview shows it: intent and the live
// leader side by side. Leader 0 means no live leader is known.
type GroupRow struct {
	ID              slotstore.GroupID
	HashSlots       int
	PreferredLeader slotstore.NodeID
	Leader          slotstore.NodeID
	Term            uint64
	ConfigEpoch     uint64
}

// Overview is what the overview page shows.
type Overview struct {
	NodeID        slotstore.NodeID
	ClusterID     string
	RouteRevision uint64
	Ready         string // empty when ready, else why not
	Groups        []GroupRow
	GeneratedAt   time.Time
}

// Source provides the overview; the server wires the node in.
type Source interface {
	Overview() Overview
}

var page = template.Must(template.New("overview").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>slotmeta console</title>
<link rel="stylesheet" href="/console/static/console.css"></head>
<body><h1>slotmeta · node {{.NodeID}}</h1>
<p data-testid="cluster">Cluster <b>{{.ClusterID}}</b> · route revision <b>{{.RouteRevision}}</b> ·
{{if .Ready}}<span class="bad" data-testid="ready">not ready: {{.Ready}}</span>{{else}}<span class="ok" data-testid="ready">ready</span>{{end}}</p>
<table data-testid="groups"><thead><tr><th>group</th><th>hash slots</th><th>live leader</th><th>term</th><th>preferred leader</th><th>config epoch</th></tr></thead>
<tbody>{{range .Groups}}<tr data-testid="group-{{printf "%d" .ID}}"><td class="num">{{printf "%d" .ID}}</td><td class="num">{{.HashSlots}}</td>
<td>{{if .Leader}}node {{.Leader}}{{else}}<span class="bad">no live leader</span>{{end}}</td><td class="num">{{.Term}}</td>
<td>node {{.PreferredLeader}}</td><td class="num">{{.ConfigEpoch}}</td></tr>{{end}}</tbody></table>
<p><small>Rendered {{.GeneratedAt.Format "2006-01-02 15:04:05 MST"}}. The full console is on its way; the API is at <a href="/openapi.yaml">/openapi.yaml</a>.</small></p>
</body></html>`))

// Handler serves the console; mount it at /console.
func Handler(src Source) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(web.Static, "static")
	mux.Handle("/console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))
	overview := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := page.Execute(w, src.Overview()); err != nil {
			http.Error(w, "render failed", http.StatusInternalServerError)
		}
	}
	mux.HandleFunc("GET /console", overview)
	mux.HandleFunc("GET /console/{$}", overview)
	return mux
}
