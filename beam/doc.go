// Package dpbeam computes dplearn's sufficient statistics (N, Σz, Σzzᵀ of
// the encoded rows) with Apache Beam, so that a table too large for one
// machine is read by a cluster (Flink, Spark, Dataflow) or, by default, by
// Prism, the runner embedded in the Beam Go SDK (no Docker, no Java).
//
// The pipeline matches file globs (any Beam filesystem: local, gs://, ...),
// reshuffles the files across workers, reads each with dplearn's streaming
// engine (package dataset: CSV, gzip-compressed CSV, Parquet; the schema's
// encoding and clipping; bad records stop the read with file:line:column,
// or are skipped and counted with SkipBadRows; the engine's parsing
// workers accumulate the file's statistics), and combines the files'
// partial statistics with a CombineFn whose accumulator is a
// suffstat.Moments.
// Because suffstat's totals are exact integers (see its package doc), the
// result equals the single-machine pass of `dplearn fit` to the last bit,
// whatever the runner's bundle sizes, number of workers and merge order.
//
// Two sinks finish the pipeline: WriteStats writes the PRIVATE statistics
// file (package statsfile), and Fit runs a statistics-only mechanism of
// package regress inside the pipeline and writes the model file with its
// privacy report, so the un-noised statistics never leave the pipeline.
//
// The command beam/cmd/dplearn-beam wraps both; docs/beam.md shows runs on
// Prism, Flink, Spark and Dataflow.
package dpbeam
