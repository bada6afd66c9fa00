module pcml.local/bench/peers/go

go 1.21
