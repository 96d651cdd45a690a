"""The main screen's panels, one module each: the panel's view type, the function building that view from the
model's state, its drawing (Rich renderables), and as data its line in the help screen (`HELP`; None: not listed)
and the main screen's widget that shows it (`WIDGET`; None: a screen of its own). No Textual here: the screens
only place the panels.

`console/headless/board.py` `MAIN` lists them, says where each goes and what each draws from the model's view.
"""
