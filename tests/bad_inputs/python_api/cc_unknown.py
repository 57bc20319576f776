# expect: cc: got 'foo'
run("rmcat-5.1", cc="foo")
