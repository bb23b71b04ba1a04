package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestProgressLine(t *testing.T) {
	tests := []struct {
		name string
		st   progressState
		want string
	}{
		{"source not connected yet reports 0", progressState{label: "copy", written: 4, done: 4, total: 0, unit: "messages", elapsed: 3 * time.Second, moving: 2 * time.Second},
			"copy  4 msgs  2 msg/s  3s"},
		{"unknown total", progressState{label: "copy", written: 10, total: -1, elapsed: 5 * time.Second, moving: 5 * time.Second},
			"copy  10 msgs  2 msg/s  5s"},
		{"more than the total arrived", progressState{label: "run", written: 12, done: 12, total: 10, unit: "messages", elapsed: 2 * time.Second, moving: 2 * time.Second},
			"run  12 msgs  6 msg/s  2s"},
		{"known total", progressState{label: "copy", written: 25, done: 25, total: 100, unit: "messages", elapsed: 6 * time.Second, moving: 5 * time.Second},
			"copy  [======                  ]   25%  25 / 100 msgs  5 msg/s  6s  ETA 15s"},
		{"bytes", progressState{label: "copy", written: 3, done: 1536, total: 3072, unit: "bytes", elapsed: time.Second, moving: time.Second},
			"copy  [============            ]   50%  1.5 KiB / 3.0 KiB  3 msgs  3 msg/s  1s  ETA 1s"},
		{"interrupted part way", progressState{label: "copy", outcome: "interrupted", written: 25, done: 25, total: 100, unit: "messages", elapsed: 6 * time.Second, moving: 5 * time.Second},
			"copy interrupted   25%  25 / 100 msgs  5 msg/s  6s"},
		{"done", progressState{label: "copy", outcome: "done", written: 100, done: 100, total: 100, unit: "messages", elapsed: 11 * time.Second, moving: 10 * time.Second},
			"copy done  100%  100 / 100 msgs  10 msg/s  11s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.st.String())
		})
	}
}
