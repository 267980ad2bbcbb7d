from p2pd.cli.launch import entry

entry()
