# expect: flow video (python:pycc_examples:Nan): target_bitrate: got NaN
run("rmcat-5.1", cc="pycc_examples:Nan")
