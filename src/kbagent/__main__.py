from kbagent.cli.app import main

main()
