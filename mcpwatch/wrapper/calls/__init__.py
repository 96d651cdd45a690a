"""What every part of the wrapper shares about a call: the calls in flight and the one way each ends (`pending`),
the events it leaves (`recorder`), its progress (`progress`) and the partial result written when it is cut
(`partial`). The core, the Tasks layer and the operator endpoint all build on these."""
