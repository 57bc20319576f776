# expect: <dict>
run({"duration": object()})
