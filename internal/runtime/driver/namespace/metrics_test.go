package namespace

import (
	"strings"
	"testing"

	"github.com/hutchdev/hutch/internal/runtime/driver"
)

func TestReadNetDev(t *testing.T) {
	const head = "Inter-|   Receive                                                |  Transmit\n" +
		" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"
	for _, tc := range []struct {
		name, text string
		want       driver.Stats
		ok         bool
	}{
		{"lo alone", head + "    lo:    1500      12    0    0    0     0          0         0     1500      12    0    0    0     0       0          0\n",
			driver.Stats{RxBytes: 1500, RxPackets: 12, TxBytes: 1500, TxPackets: 12}, true},
		{"every interface adds up", head +
			"    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0     0       0          0\n" +
			"  eth0: 655512707   31588    0    0    0     0          0         0  2730748   24763    0    0    0     0       0          0\n",
			driver.Stats{RxBytes: 655512807, RxPackets: 31589, TxBytes: 2730848, TxPackets: 24764}, true},
		{"no interface", head, driver.Stats{}, true},
		{"short line", head + "    lo: 1 2 3\n", driver.Stats{}, false},
		{"not a number", head + "    lo: x 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", driver.Stats{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got driver.Stats
			err := readNetDev(strings.NewReader(tc.text), &got)
			if (err == nil) != tc.ok {
				t.Fatalf("readNetDev = %v, want ok %v", err, tc.ok)
			}
			if tc.ok && (got.RxBytes != tc.want.RxBytes || got.TxBytes != tc.want.TxBytes ||
				got.RxPackets != tc.want.RxPackets || got.TxPackets != tc.want.TxPackets) {
				t.Errorf("readNetDev = %+v, want %+v", got, tc.want)
			}
		})
	}
}
