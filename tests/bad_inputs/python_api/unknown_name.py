# expect: catalog
run("no-such-scenario")
