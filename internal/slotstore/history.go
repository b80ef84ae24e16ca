package slotstore

import "context"

// History is what the console charts from (issue 30): every node's recent
// vital signs, kept by each node about itself at fixed steps, and the hash
// slots' operations per step, counted by the controller leader from every
// node's reports. Both are in-process and bounded (an hour of points, half
// an hour of heat columns at the default ten-second step): a restarted node,
// or a new controller leader, starts its history again.
type History interface {
	// Node returns node's history: this node's own, or asked of the node
	// over the peer port (unavailable when it does not answer).
	Node(ctx context.Context, node NodeID) (NodeHistory, error)
	// Heat returns the hash slots' heat, from the controller leader.
	Heat(ctx context.Context) (SlotHeat, error)
}

// NodeHistory is one node's vital signs, one point per step, oldest first.
type NodeHistory struct {
	Node        NodeID         `json:"node"`
	Version     string         `json:"version"`
	StartedAtMs int64          `json:"started_at_ms"` // when the node's history began (its start)
	StepMs      int64          `json:"step_ms"`
	Points      []HistoryPoint `json:"points"`
}

// HistoryPoint is a node's vital signs over one step ending at AtMs. Rates
// are per second over the step; gauges are as sampled at its end.
type HistoryPoint struct {
	AtMs int64 `json:"at_ms"`
	// Reads and Writes are the operations this node's API served (counted
	// where the client sent them, like the heat map).
	Reads  float64 `json:"reads_per_s"`
	Writes float64 `json:"writes_per_s"`
	// P99Ms is the 99th percentile latency of the API's requests in the
	// step (watch streams left out: they last as long as their client), 0
	// when none was served.
	P99Ms float64 `json:"p99_ms"`
	// Errors are the API's answers of 4xx and 5xx per second, by HTTP status.
	Errors map[string]float64 `json:"errors_per_s,omitempty"`
	// LeaderChanges are the leaders this node's replicas saw taken in the step.
	LeaderChanges float64 `json:"leader_changes"`
	// ApplyLag is the most entries any local replica holds in its log but
	// has not applied (last log index − applied index).
	ApplyLag   float64 `json:"apply_lag"`
	CPUCores   float64 `json:"cpu_cores"` // the process's CPU time per second
	RSSBytes   float64 `json:"rss_bytes"`
	DiskBytes  float64 `json:"disk_bytes"` // the data directory, as allocated on disk
	Goroutines float64 `json:"goroutines"`
}

// SlotHeat is the operations the API served per hash slot, summed over the
// nodes, one column per step, oldest first.
type SlotHeat struct {
	StepMs  int64        `json:"step_ms"`
	Columns []HeatColumn `json:"columns"`
	// Aggregator is the controller leader that counted them.
	Aggregator NodeID `json:"aggregator"`
}

// HeatColumn is one step beginning at AtMs: the reads and writes of every
// hash slot (indexed by hash slot; absent when the step had none).
type HeatColumn struct {
	AtMs   int64    `json:"at_ms"`
	Reads  []uint32 `json:"reads,omitempty"`
	Writes []uint32 `json:"writes,omitempty"`
}
