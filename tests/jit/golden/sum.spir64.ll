; ModuleID = 'sum'
source_filename = "sum"
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-n8:16:32:64"
target triple = "spir64-unknown-unknown"

; Function Attrs: nounwind
define spir_kernel void @sum(double addrspace(1)* %x, i64 %x.extent0, i64 %x.first, double addrspace(1)* %total.partials, double addrspace(3)* %total.scratch, i64 %begin0, i64 %end0) #0 !kernel_arg_addr_space !1 !kernel_arg_access_qual !2 !kernel_arg_type !3 !kernel_arg_base_type !3 !kernel_arg_type_qual !4 !kernel_arg_name !5 {
entry:
  %points = sub i64 %end0, %begin0
  %0 = call spir_func i64 @_Z15get_global_sizej(i32 0) #1
  %1 = call spir_func i64 @_Z13get_global_idj(i32 0) #1
  %2 = icmp slt i64 %1, %points
  br i1 %2, label %walk, label %walked

walk:                                             ; preds = %walk, %entry
  %total.acc.0 = phi double [ 0.000000e+00, %entry ], [ %6, %walk ]
  %point = phi i64 [ %1, %entry ], [ %point.next, %walk ]
  %i0 = add nsw i64 %begin0, %point
  %3 = sub i64 %i0, %x.first
  %4 = getelementptr inbounds double, double addrspace(1)* %x, i64 %3
  %5 = load double, double addrspace(1)* %4, align 8
  %6 = fadd reassoc double %total.acc.0, %5
  %point.next = add nsw i64 %point, %0
  %7 = icmp slt i64 %point.next, %points
  br i1 %7, label %walk, label %walked

walked:                                           ; preds = %walk, %entry
  %total.acc.1 = phi double [ %6, %walk ], [ 0.000000e+00, %entry ]
  %8 = call spir_func i64 @_Z12get_local_idj(i32 0) #1
  %9 = call spir_func i64 @_Z14get_local_sizej(i32 0) #1
  %10 = getelementptr inbounds double, double addrspace(3)* %total.scratch, i64 %8
  store double %total.acc.1, double addrspace(3)* %10, align 8
  call spir_func void @_Z7barrierj(i32 1) #2
  %half = lshr i64 %9, 1
  %11 = icmp ne i64 %half, 0
  br i1 %11, label %tree, label %publish

tree:                                             ; preds = %tree.next, %walked
  %half1 = phi i64 [ %half, %walked ], [ %half.next, %tree.next ]
  %12 = icmp ult i64 %8, %half1
  br i1 %12, label %tree.fold, label %tree.next

tree.fold:                                        ; preds = %tree
  %13 = getelementptr inbounds double, double addrspace(3)* %total.scratch, i64 %8
  %14 = load double, double addrspace(3)* %13, align 8
  %15 = add i64 %8, %half1
  %16 = getelementptr inbounds double, double addrspace(3)* %total.scratch, i64 %15
  %17 = load double, double addrspace(3)* %16, align 8
  %18 = fadd reassoc double %14, %17
  store double %18, double addrspace(3)* %13, align 8
  br label %tree.next

tree.next:                                        ; preds = %tree.fold, %tree
  call spir_func void @_Z7barrierj(i32 1) #2
  %half.next = lshr i64 %half1, 1
  %19 = icmp ne i64 %half.next, 0
  br i1 %19, label %tree, label %publish

publish:                                          ; preds = %tree.next, %walked
  %20 = call spir_func i64 @_Z12get_group_idj(i32 0) #1
  %21 = icmp eq i64 %8, 0
  br i1 %21, label %write, label %written

write:                                            ; preds = %publish
  %22 = getelementptr inbounds double, double addrspace(3)* %total.scratch, i64 0
  %23 = load double, double addrspace(3)* %22, align 8
  %24 = getelementptr inbounds double, double addrspace(1)* %total.partials, i64 %20
  store double %23, double addrspace(1)* %24, align 8
  br label %written

written:                                          ; preds = %write, %publish
  ret void
}

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z15get_global_sizej(i32) #1

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z13get_global_idj(i32) #1

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z12get_local_idj(i32) #1

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z14get_local_sizej(i32) #1

; Function Attrs: convergent nounwind
declare spir_func void @_Z7barrierj(i32) #2

; Function Attrs: nounwind readnone willreturn
declare spir_func i64 @_Z12get_group_idj(i32) #1

attributes #0 = { nounwind }
attributes #1 = { nounwind readnone willreturn }
attributes #2 = { convergent nounwind }

!opencl.ocl.version = !{!0}
!opencl.spir.version = !{!0}

!0 = !{i32 1, i32 2}
!1 = !{i32 1, i32 0, i32 0, i32 1, i32 3, i32 0, i32 0}
!2 = !{!"none", !"none", !"none", !"none", !"none", !"none", !"none"}
!3 = !{!"double*", !"long", !"long", !"double*", !"double*", !"long", !"long"}
!4 = !{!"const", !"", !"", !"", !"", !"", !""}
!5 = !{!"x", !"x_n0", !"x_first", !"total_partials", !"total_scratch", !"begin0", !"end0"}
