from p2pd.cli.main import entry

entry()
