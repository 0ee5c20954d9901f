module github.com/listwatch/listwatch/test/interop

go 1.26

replace github.com/listwatch/listwatch => ../..
