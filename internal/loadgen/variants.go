package loadgen

import (
	"context"
	"errors"
	"fmt"

	"github.com/interlink-go/interlink/internal/loadgen/busclient"
	"github.com/interlink-go/interlink/internal/loadgen/delayproxy"
	"github.com/interlink-go/interlink/internal/loadgen/measure"
	"github.com/interlink-go/interlink/internal/loadgen/target"
	"github.com/interlink-go/interlink/internal/loadgen/variant"
)

// variantRun is a variant of the roundtrip scenario ([Config.TLS],
// [Config.Signed], [Config.Sealed]) on an in-process bus of its own.
type variantRun struct {
	v      variant.Variant
	target *target.Target
	client *busclient.Client
	lanes  []variant.Lane
	stop   []func() error // in the order to call them
}

// startVariants starts the bus of every variant the configuration asks
// for, with the plain bus's store settings, and its clients; it adds what
// they are to rep's target.
func (r *run) startVariants(rep *Report) error {
	cfg := r.cfg
	for _, v := range variant.List(cfg.TLS, cfg.Signed, cfg.Sealed) {
		vr := &variantRun{v: v}
		r.variants = append(r.variants, vr)
		opts, pair, err := v.Bus(target.Options{Store: cfg.Store,
			QueueCap: cfg.QueueCap, QueueBytes: cfg.QueueBytes, TotalBytes: cfg.TotalBytes,
			ID: target.NewID(), Logger: r.log})
		if err != nil {
			return err
		}
		if vr.target, err = target.Start(opts); err != nil {
			return err
		}
		vr.stop = append(vr.stop, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), measure.Grace)
			defer cancel()
			return vr.target.Stop(ctx)
		})
		url := vr.target.URL
		if cfg.Latency > 0 {
			p, u, err := delayproxy.For(url, cfg.Latency)
			if err != nil {
				return err
			}
			vr.stop = append([]func() error{func() error { p.Close(); return nil }}, vr.stop...)
			url = u
		}
		vr.client = busclient.New(url, cfg.KeepAlive, 2*cfg.Senders)
		if pair != nil {
			vr.client.Trust(pair.Client)
		}
		vr.stop = append([]func() error{func() error { vr.client.Close(); return nil }}, vr.stop...)
		if vr.lanes, err = v.Lanes(vr.client, cfg.Senders); err != nil {
			return err
		}
		rep.Target += "; " + v.Desc() + ", on a bus of its own"
	}
	return nil
}

// stopVariants stops what [run.startVariants] started.
func (r *run) stopVariants() error {
	var errs []error
	for _, vr := range r.variants {
		for _, stop := range vr.stop {
			errs = append(errs, stop())
		}
	}
	return errors.Join(errs...)
}

// variantRound measures one round of vr's roundtrip, reported beside the
// plain roundtrip.
func (r *run) variantRound(ctx context.Context, vr *variantRun) (measure.Result, error) {
	res, _, err := r.cycles(ctx, vr.lanes, vr.v.Name(), "rt")
	res.Beside = string(ModeRoundtrip)
	if err != nil {
		err = fmt.Errorf("%s: %w", vr.v.Name(), err)
	}
	return res, err
}
