package regress

// CoefTable is the "inference" section of a model file: the coefficient
// table written by package fit (original units, standard errors,
// confidence intervals, or why there are none). Every number in it is a
// function of released values and public parameters (the schema), so it
// is public (PRIVACY-NOTES item 23).
type CoefTable struct {
	Level    float64   `json:"level,omitempty"`
	Method   string    `json:"method,omitempty"`
	Estimand string    `json:"estimand,omitempty"`
	Rows     []CoefRow `json:"coefficients"`
	// TargetMoment is the released Λ0 (linear FM-family fits).
	TargetMoment *float64 `json:"target_moment,omitempty"`
	// DroppedShare is the released share of rows that are dropped records
	// (linear FM-family fits whose schema drops records).
	DroppedShare *float64 `json:"dropped_share,omitempty"`
	// Unavailable says why there are no intervals.
	Unavailable string `json:"unavailable,omitempty"`
	// Replicates and Failed are the bootstrap's size and its replicates in
	// which the noisy Λ2 lost a direction.
	Replicates int `json:"replicates,omitempty"`
	Failed     int `json:"failed_replicates,omitempty"`
	// Diagnosis says why coefficients are unidentified and what would
	// identify them.
	Diagnosis string `json:"diagnosis,omitempty"`
	// Note is a caveat on what the coefficients estimate.
	Note string `json:"note,omitempty"`
	// Classical is the reference fit's classical summary (nonprivate).
	Classical *ClassicalSummary `json:"classical,omitempty"`
}

// CoefRow is one line of the coefficient table.
type CoefRow struct {
	Name    string  `json:"name"`
	Encoded float64 `json:"encoded"`
	// Original is the fitted coefficient in original units; Meaning says
	// what it means in words.
	Original float64 `json:"original"`
	Meaning  string  `json:"meaning"`
	// The inference, when available: encoded-space and original-units
	// standard error and confidence interval.
	Identified bool    `json:"identified,omitempty"`
	SE         float64 `json:"se,omitempty"`
	// Stat and PValue are the classical t or z statistic for the
	// original-units coefficient = 0 and its two-sided p-value (reference
	// fit only).
	Stat          *float64 `json:"stat,omitempty"`
	PValue        *float64 `json:"p_value,omitempty"`
	Lower         float64  `json:"lower,omitempty"`
	Upper         float64  `json:"upper,omitempty"`
	OriginalSE    float64  `json:"original_se,omitempty"`
	OriginalLower float64  `json:"original_lower,omitempty"`
	OriginalUpper float64  `json:"original_upper,omitempty"`
	// WeaklyLocated warns that the interval rests on an eigen-direction
	// the released objective locates by less than one noise SD above its
	// identification floor (inference.Coefficient.WeaklyLocated): at the
	// identification edge such intervals under-covered.
	WeaklyLocated bool `json:"weakly_located,omitempty"`
	// FittedEncoded and FittedOriginal are the ridge-regularised fit the
	// model predicts with, when the printed estimate is the interval's
	// de-ridged point estimate instead.
	FittedEncoded  *float64 `json:"fitted_encoded,omitempty"`
	FittedOriginal *float64 `json:"fitted_original,omitempty"`
}

// ClassicalSummary is the fit-level part of statsmodels' summary for the
// reference fit. The log-likelihood (and AIC, BIC) of a linear fit is that
// of the target on its declared, transformed scale (log wage for a log
// target), as statsmodels would report it fitted on that scale.
type ClassicalSummary struct {
	Cov      string   `json:"cov_type"`
	Stat     string   `json:"statistic"` // "t" or "z"
	Nobs     int64    `json:"nobs"`
	DFModel  float64  `json:"df_model"`
	DFResid  float64  `json:"df_resid"`
	LogLik   float64  `json:"log_likelihood"`
	AIC      float64  `json:"aic"`
	BIC      float64  `json:"bic"`
	R2       *float64 `json:"r_squared,omitempty"`
	AdjR2    *float64 `json:"adj_r_squared,omitempty"`
	F        *float64 `json:"f_statistic,omitempty"`
	FPValue  *float64 `json:"f_pvalue,omitempty"`
	Sigma    *float64 `json:"residual_sd,omitempty"`
	LLNull   *float64 `json:"ll_null,omitempty"`
	LLR      *float64 `json:"llr,omitempty"`
	LLRP     *float64 `json:"llr_pvalue,omitempty"`
	PseudoR2 *float64 `json:"pseudo_r_squared,omitempty"`
	Deviance *float64 `json:"deviance,omitempty"`
}
