// Package hostile is the adversarial test suite: real buses on loopback,
// real agents and real files, driven the way a hostile peer, a stranger, a
// bus client or a damaged file would drive them. Each test is named for the
// behaviour it proves holds under that attack. The package has no code a
// binary links; everything it checks lives in the packages it exercises.
package hostile
