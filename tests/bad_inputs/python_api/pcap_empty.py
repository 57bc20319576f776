# expect: pcap
run("dumbbell-cbr", pcap="")
