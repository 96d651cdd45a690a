"""Pure helpers behind the log commands: report figures, export records, durations. No I/O, no rich."""
