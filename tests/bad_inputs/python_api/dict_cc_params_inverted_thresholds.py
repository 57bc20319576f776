# expect: flows[0].cc_params.gcc.threshold_max: got "5 ms", expected >= threshold_min ("6 ms")
run({"duration": "1 s", "bottleneck": {"rate": "1 Mbit/s"}, "flows": [{"id": "v", "kind": "rtp-video", "cc": "gcc", "cc_params": {"gcc": {"threshold_max": "5 ms"}}}]})
