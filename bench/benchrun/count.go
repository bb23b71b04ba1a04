package benchrun

import (
	"strings"
	"time"
)

// How Run sizes a round when Config.Count is 0 (auto). A fixed count gave
// rounds of very different lengths: 1,024 messages of 1 KiB drained in
// about 30 ms, those of 1 MiB in about 600 ms. A 30 ms round is at the
// mercy of whatever else the machine does in those 30 ms: the rounds of a
// 1 KiB drain spread from 0.86 to 1.23 of the raw loop, and the same cells
// at 8,192 messages spread half as far.
const (
	// DefaultRoundTime is how long a round of the raw arm should take.
	DefaultRoundTime = 250 * time.Millisecond
	// autoMinCount is the fewest messages of an auto round, and the size
	// of the pilot round that sets the count. A round also has at least
	// autoMinSteps batches: a round of one batch is one fsync of the
	// whole round on a disk, and says little.
	autoMinCount = 256
	autoMinSteps = 4
	// autoMaxCount and autoMaxBytes bound an auto round, the bytes so that
	// a backlog of large payloads fits in memory or on the disk.
	autoMaxCount = 65536
	autoMaxBytes = 1 << 30
)

// autoBounds returns the fewest and the most messages an auto round of c
// may have, both whole batches and hi never under lo. The byte bound gives
// way to one batch of c, and otherwise wins over the fewest.
func autoBounds(c Case) (lo, hi int) {
	byBytes := max(1, autoMaxBytes/max(1, c.PayloadBytes))
	lo = roundUp(max(autoMinCount, autoMinSteps*c.BatchSize), c.BatchSize)
	lo = max(c.BatchSize, min(lo, byBytes/c.BatchSize*c.BatchSize))
	hi = min(autoMaxCount, byBytes) / c.BatchSize * c.BatchSize
	return lo, max(lo, hi)
}

// autoCount returns the messages of a round of c in which the raw arm takes
// about roundTime, given what one message took it in the pilot: whole
// batches, within autoBounds, and when the bounds allow, whole blocks of
// the arms' turns (blockSteps), so that in every round each of the arms
// runs in each place of a step as often (stepOrder).
func autoCount(c Case, arms int, rawPerMsg, roundTime time.Duration) int {
	lo, hi := autoBounds(c)
	n := hi
	if rawPerMsg > 0 {
		n = int(min(int64(roundTime/rawPerMsg), int64(hi)))
		n = min(hi, max(lo, roundUp(n, c.BatchSize)))
	}
	return wholeBlocks(n/c.BatchSize, blockSteps(arms), lo/c.BatchSize, hi/c.BatchSize) * c.BatchSize
}

// wholeBlocks returns steps rounded up to whole blocks of block steps when
// that stays within most, else down to whole blocks when that stays at
// least least, else steps as they are.
func wholeBlocks(steps, block, least, most int) int {
	if up := roundUp(steps, block); up <= most {
		return up
	}
	if down := most / block * block; down >= max(least, block) {
		return down
	}
	return steps
}

// pilotCount is the messages of the pilot round Run makes of every case
// before its first round, with count fixed or 0 (auto): a batch, at least
// autoMinCount messages, but never more than a round.
func pilotCount(c Case, count int) int {
	lo, _ := autoBounds(c)
	n := min(lo, roundUp(max(autoMinCount, c.BatchSize), c.BatchSize))
	if count > 0 {
		n = min(n, count)
	}
	return n
}

// fastestRaw returns what the fastest raw arm of tt took for one of its n
// messages.
func fastestRaw(tt *trialTimes, n int) time.Duration {
	var best time.Duration
	for i, name := range tt.arms {
		if strings.HasPrefix(name, RawArmPrefix) && (best == 0 || tt.total[i] < best) {
			best = tt.total[i]
		}
	}
	return best / time.Duration(n)
}

// roundUp returns n rounded up to a multiple of k.
func roundUp(n, k int) int {
	if k <= 1 {
		return n
	}
	return (n + k - 1) / k * k
}
