package meta

// EncodeCommandUnchecked is EncodeCommand without its limits: the bytes an
// encoder that did not check them would write (the coder goes on writing
// past a failure), so tests can show the decoder refuses them too.
func EncodeCommandUnchecked(c Command) []byte {
	k := encoding(64)
	k.b = append(k.b, commandVersion, uint8(c.Op()))
	codeCommand(&k, c)
	return k.b
}
