from mcpwatch.cli import main

raise SystemExit(main())
