// Package lookalike decides how text reads to a person or a model: which
// characters show nothing, and when two texts read alike.
//
// The rule comes from maintained Unicode data, not from a hand table:
//
//   - [Ignorable] is the Default_Ignorable_Code_Point property (characters a
//     renderer draws as nothing, such as zero-width characters, tag
//     characters, variation selectors and the Hangul fillers), derived from
//     the standard library's Unicode tables the way the Unicode Character
//     Database derives it.
//   - [Skeleton] and [Form] rest on the confusables of Unicode Technical
//     Standard #39 (the skeleton of go.mau.fi/util/confusable, generated from
//     Unicode's confusables.txt), which maps every character that is drawn
//     like another, a Cyrillic "а" or a Cherokee "Ꮮ", to one prototype.
//
// Every place that compares names or recognizes interlink's own words uses
// these functions: petnames and the reserved names "self" and "Interlink"
// ([Alike], [Spells]), the line prefixes and tags the renderer marks or
// breaks ([Leads], [Ends]), and the text shown to a model ([Visible]).
//
// # Reading a text
//
// [Form] is what a reader takes in from a text: its compatibility form
// (NFKC, so full-width and mathematical letters are plain ones), without
// ignorable characters, accents and other combining marks, each remaining
// character replaced by its UTS #39 prototype, and of those only the
// letters and digits. White space, punctuation and symbols do not count:
// "in ter-link", "[interlink" and "⠀interlink" (after a braille blank)
// all read as "interlink".
//
// UTS #39 skeletons keep case: "I" is drawn like "l", but "i" is not. A
// reader, though, recognizes a word in any case. So a text reads as a word
// when its form equals the form of the word written with each letter in
// either case: "INTERLINK", "interIink" (a capital I for the l) and
// "ꓲNTERLINK" (a Lisu letter for the I) all read as "interlink", while
// "interiink" does not, since a small i is not drawn like an l.
//
// # Limits
//
// The confusables data pairs single characters with their prototypes, some
// of them several letters long ("m" is drawn like "rn", which the skeleton
// covers). It does not pair every letter a reader might take for another:
// it keeps the small capital "ĸ" apart from "k", for one. For interlink's
// own words, which are ASCII, [Spells], [Leads] and [Ends] therefore also
// accept one letter of the word written with any letter outside ASCII:
// "Interlinĸ" reads as "Interlink". Names compared with [Alike] get no such
// allowance, since any two names in a script other than Latin would then
// look alike.
package lookalike
