package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/paillier/keyfile"
)

// parseDeployments maps the coordinator's --deployment
// NAME=DEPLOYMENT.json:PUBLIC_KEY.pem flags to the DPPP deployments it
// serves as the aggregator.
func parseDeployments(flags []string) (map[string]coordinator.Deployment, error) {
	out := map[string]coordinator.Deployment{}
	for _, f := range flags {
		name, rest, ok := strings.Cut(f, "=")
		file, pub, ok2 := strings.Cut(rest, ":")
		if !ok || !ok2 || name == "" || file == "" || pub == "" {
			return nil, fmt.Errorf("--deployment %q: want NAME=DEPLOYMENT.json:PUBLIC_KEY.pem", f)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("--deployment %s given twice", name)
		}
		d, err := wire.LoadDeployment(file)
		if err != nil {
			return nil, err
		}
		tpk, err := keyfile.LoadThresholdPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("--deployment %s: %w", name, err)
		}
		out[name] = coordinator.Deployment{Settings: *d, Key: tpk}
	}
	return out, nil
}

// parseModels maps a node's --model NAME=MODEL.json:SHARE.pem:DEPLOYMENT.json
// flags to the DPPP deployments it is a teacher of.
func parseModels(flags []string) ([]node.Model, error) {
	var out []node.Model
	for _, f := range flags {
		name, rest, ok := strings.Cut(f, "=")
		parts := strings.Split(rest, ":")
		if !ok || name == "" || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return nil, fmt.Errorf("--model %q: want NAME=MODEL.json:KEY_SHARE.pem:DEPLOYMENT.json", f)
		}
		out = append(out, node.Model{Name: name, Path: parts[0], KeyShare: parts[1], Deployment: parts[2]})
	}
	return out, nil
}

// dpppTaskSpec reads a DPPP query task's rows: the table queries through
// the deployment's input spec (the one the teachers trained with; labels,
// if present, are ignored).
func dpppTaskSpec(ctx context.Context, deployment, specPath, queries string) (wire.TaskSpec, error) {
	spec, err := classify.LoadSpec(specPath)
	if err != nil {
		return wire.TaskSpec{}, fmt.Errorf("--schema: %w", err)
	}
	d, _, err := spec.LoadFeatures(ctx, queries, dataset.Options{})
	if err != nil {
		return wire.TaskSpec{}, fmt.Errorf("--queries %s: %w", queries, err)
	}
	if d.N() == 0 {
		return wire.TaskSpec{}, fmt.Errorf("--queries %s: no rows", queries)
	}
	rows := make([][]float64, d.N())
	for i := range rows {
		rows[i] = append([]float64(nil), d.Row(i)...)
	}
	if err := wire.CheckQueryRows(rows); err != nil {
		return wire.TaskSpec{}, fmt.Errorf("--queries %s: %w", queries, err)
	}
	return wire.TaskSpec{Kind: wire.KindDPPP, Deployment: deployment, Rows: rows}, nil
}

// printLabels prints a DPPP task's labels: one "row,label" line per query
// row (the class name where the teachers registered them).
func printLabels(w io.Writer, r *coordinator.Result) {
	fmt.Fprintf(w, "  labels (%d rows, teachers %s): %s\n", len(r.Labels), strings.Join(r.Sites, ", "), r.Guarantee)
	fmt.Fprintln(w, "  row,label")
	for i, l := range r.Labels {
		name := fmt.Sprint(l)
		if l >= 0 && l < len(r.ClassNames) {
			name = r.ClassNames[l]
		}
		fmt.Fprintf(w, "  %d,%s\n", i+1, name)
	}
}
