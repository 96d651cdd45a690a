"""The wrapper's core: the message pump (`pump.WrapperCore`) and the parts it routes a call through, independent of
any transport. Fronts and upstream links reach it only through its ports (`port`)."""
