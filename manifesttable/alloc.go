package manifesttable

import "github.com/apache/arrow-go/v18/arrow/memory"

var memAlloc = memory.DefaultAllocator
