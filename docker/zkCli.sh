#!/bin/sh
# zkCli.sh of the zkr image: `zkr cli` takes zkCli.sh's options and commands and prints what it
# prints (`docker exec -it zoo1 zkCli.sh -server localhost:2181`). ZKR_BIN names the binary.
exec "${ZKR_BIN:-zkr}" cli "$@"
