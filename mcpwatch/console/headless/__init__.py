"""The console without Textual: the view model, the live feed and session, operator controls, Rich renderables,
formatting, input checks and the sample streams. Replay, reports and the benchmarks reuse these; the screens and
widgets (Textual) sit on top of them."""
