// Package measure holds what one load measurement yields: a [Result],
// with its mode-specific [Field]s, and the one line a report prints for
// it ([Result.String]).
//
// It also holds the bound every measurement keeps on its workers: once a
// phase's deadline has passed they get [Grace] to return, and a
// measurement that cannot stop them fails with [ErrStuck] rather than
// hang.
package measure
