"""The console without Textual: the view model and its parts, the main screen's panels (`panels/`: view, builder,
drawing and help of each), the live feed and session, operator controls, the Trends, Models and Fleet data,
formatting, filter, export, input checks and the sample streams. Replay, reports and the benchmarks reuse these;
the screens and widgets (Textual) sit on top of them."""
