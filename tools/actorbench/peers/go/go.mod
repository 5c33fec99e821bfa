module actorbench

go 1.19
