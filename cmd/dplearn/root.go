package main

import (
	"github.com/spf13/cobra"
)

// newRootCmd builds the command tree. Each command group lives in its own
// file and contributes one constructor here; there is no package-level
// command state.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "dplearn",
		Short: "Differentially private regression and prediction across parties",
		Long: `dplearn fits differentially private (DP) regression models on data that
cannot be shared, and prints a privacy report computed by code for every release.

Central models:   dplearn schema init / fit / predict / evaluate / demo
First look (DP):  dplearn schema suggest / describe   (charged to --ledger)
Privacy budget:   dplearn ledger create|charge|show (fit --ledger charges it)
Across sites:     dplearn certs             (a CA and one certificate per party)
                  dplearn cape serve|join|simulate   (capeFM: one model from S sites)
Consortium:       dplearn coordinator|node  (long-running), task submit|status|result|cancel, budget, audit verify
Privacy maths:    dplearn privacy calibrate|gaussian-steps|subsampled|cape|binomial|sample|ledger
Experiments:      dplearn experiment NAME   (reproduce the seed papers' figures)
Prediction:       dplearn dppp keygen|train (threshold Paillier keys; a teacher's local model)

Start with 'dplearn demo', then 'dplearn fit --help'.

Every bound on the data (feature ranges, label range, categories) is public and
declared in a schema file; nothing is derived from the private data without
differential privacy ('dplearn schema suggest' estimates bounds with DP and
charges them to a ledger; 'dplearn describe' releases DP summary statistics).`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		// Command groups: one constructor per file, added here.
		newFitCmd(),
		newPredictCmd(),
		newEvaluateCmd(),
		newDemoCmd(),
		newPrivacyCmd(),
		newDPPPCmd(),
		newExperimentCmd(),
		newCertsCmd(),
		newCapeCmd(),
		newLedgerCmd("dplearn ledger"),
		newSchemaCmd(),
		newDescribeCmd(),
	)
	root.AddCommand(consortiumCmds()...)
	return root
}
