module github.com/listwatch/listwatch

go 1.26
