# expect: flows[0].cc_params.gcc.beta: got -5, expected > 0 and <= 1
run({"duration": "1 s", "bottleneck": {"rate": "1 Mbit/s"}, "flows": [{"id": "v", "kind": "rtp-video", "cc": "gcc", "cc_params": {"gcc": {"beta": -5}}}]})
