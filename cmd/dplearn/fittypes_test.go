package main

import "github.com/dplearn/dplearn/regress"

// The tests decode model files' "inference" section with the names the
// table had when package main computed it; package fit computes it now
// (regress.CoefTable).
type (
	coefReport = regress.CoefTable
	coefRow    = regress.CoefRow
)
