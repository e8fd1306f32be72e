package loadgen

import (
	"cmp"
	"context"
	"time"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/loadgen/variant"
)

// wireFloorName names the result of [run.wireFloor].
const wireFloorName = "wirefloor"

// wireFloor measures the roundtrip scenario, with the same client settings
// and senders, against the least a bus could be: [target.WireStub], served in
// this process like the floor. Beside the floor, whose server answers every
// request with an empty 200, it tells how much of a bus's distance from
// the floor any server speaking the bus's wire format must pay (reply
// bodies, their headers, parsing them in the load generator) and how much
// is the bus's own work.
func (r *run) wireFloor(ctx context.Context) (res measure.Result, err error) {
	base, stop, err := r.floors.serve(target.WireStub(time.Now))
	if err != nil {
		return measure.Result{Name: wireFloorName}, err
	}
	defer func() { err = cmp.Or(err, stop()) }()
	c := busclient.New(base, r.cfg.KeepAlive, r.cfg.Senders)
	defer c.Close()
	res, _, err = r.cycles(ctx, variant.Plain(c, r.cfg.Senders), wireFloorName, "wf")
	return res, err
}
