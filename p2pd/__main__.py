from p2pd.cli.main import main

raise SystemExit(main())
