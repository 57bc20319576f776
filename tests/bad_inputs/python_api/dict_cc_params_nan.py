# expect: flows[0].cc_params.nada.kappa: got nan, expected a finite number
validate({"duration": "1 s", "bottleneck": {"rate": "1 Mbit/s"}, "flows": [{"id": "v", "kind": "rtp-video", "cc": "nada", "cc_params": {"nada": {"kappa": float("nan")}}}]})
